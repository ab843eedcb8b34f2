// Package term shows cudarepl's text as a terminal reads it best: Markdown
// prose rendered with glamour (tables drawn, code set apart, no literal
// backticks), and a progress bar drawn with progressbar. It does neither
// where the output is not a terminal: a file, a pipe or a test gets the
// text as written, so that transcripts stay plain and stable. It knows
// nothing of the lessons; the REPL hands its writers to them.
package term
