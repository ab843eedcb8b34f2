package term

import (
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/charmbracelet/glamour"
	gansi "github.com/charmbracelet/glamour/ansi"
	"github.com/charmbracelet/glamour/styles"
	"github.com/charmbracelet/x/ansi"
	"github.com/schollz/progressbar/v3"
	xterm "golang.org/x/term"
)

// IsTerminal reports whether w is a terminal: an *os.File on one.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && xterm.IsTerminal(int(f.Fd()))
}

// Width is the number of columns of the terminal w is, and 80 where w is
// not one or does not say.
func Width(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := xterm.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// Markdown is a terminal's output that renders Markdown prose for it
// (WriteMarkdown) and writes everything else as it is. The lessons'
// View.Prose writes prose through it where their output is one.
type Markdown struct {
	io.Writer
	width int

	once     sync.Once
	renderer *glamour.TermRenderer
	err      error
}

// NewMarkdown returns w as a Markdown output for a terminal width columns
// wide. Prose wraps a column short of that, and at 88 columns at most: a
// wide terminal's full width is too long a line to read.
func NewMarkdown(w io.Writer, width int) *Markdown {
	if width <= 0 {
		width = 80
	}
	return &Markdown{Writer: w, width: max(20, min(width-1, 88))}
}

// Output returns w as a Markdown output where w is a terminal, and w
// itself elsewhere: prose then reads as written.
func Output(w io.Writer) io.Writer {
	if !IsTerminal(w) {
		return w
	}
	return NewMarkdown(w, Width(w))
}

// WriteMarkdown writes md, Markdown, rendered for the terminal, and a
// newline. It writes nothing where md cannot be rendered, and returns
// why: the caller then writes it as it is.
func (m *Markdown) WriteMarkdown(md string) error {
	m.once.Do(func() {
		// The renderer is made on first use, not at start-up: a session
		// that shows no prose pays nothing for it. With no width, glamour lays tables out at their own width and
		// leaves lines whole, and wrap wraps them. Glamour's own wrapping,
		// two passes that disagree about hyphens, leaves a word alone on
		// a line after a line with a hyphenated word, and breaks
		// "-test.run" from what comes before it.
		m.renderer, m.err = glamour.NewTermRenderer(glamour.WithStyles(Style()), glamour.WithWordWrap(0))
	})
	if m.err != nil {
		return m.err
	}
	out, err := m.renderer.Render(unbreak(md))
	if err != nil {
		return err
	}
	_, err = io.WriteString(m.Writer, wrap(strings.Trim(out, "\n"), m.width)+"\n")
	return err
}

// blockStart is a Markdown line that starts a block of its own: a list
// item, a heading, a table row, a quote, a fence, or indented code.
var blockStart = regexp.MustCompile("^(\\s*([-*+] |\\d+\\. )|#|\\||>|\\s*```|    )")

// unbreak joins the lines of each paragraph and list item of md, as
// Markdown reads its soft line breaks, so that a renderer that does not
// wrap leaves each on one line for wrap. Fenced code is left as it is.
func unbreak(md string) string {
	var out []string
	fenced, joinable := false, false // joinable: the last line takes the next
	for _, line := range strings.Split(md, "\n") {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case fenced || fence || strings.TrimSpace(line) == "" || !joinable || blockStart.MatchString(line) && !strings.HasPrefix(line, "    "):
			out = append(out, line)
		default:
			out[len(out)-1] += " " + strings.TrimSpace(line)
		}
		if fence {
			fenced = !fenced
		}
		joinable = !fenced && !fence && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "#") &&
			(joinable || !strings.HasPrefix(line, "    "))
	}
	return strings.Join(out, "\n")
}

// listItem is the start of a rendered list item, up to its text.
var listItem = regexp.MustCompile(`^\s*(• |\d+\. )`)

// wrap wraps the lines of rendered prose at width columns, at spaces
// only, a list item's text under its first line's; table rows (drawn
// with │) and code (indented) stay whole. Trailing spaces go.
func wrap(rendered string, width int) string {
	var out []string
	for _, line := range strings.Split(rendered, "\n") {
		line = strings.TrimRight(line, " ")
		if ansi.StringWidth(line) <= width || strings.Contains(line, "│") || strings.HasPrefix(line, "  ") {
			out = append(out, line)
			continue
		}
		hang := 0
		if m := listItem.FindString(ansi.Strip(line)); m != "" {
			hang = ansi.StringWidth(m)
		}
		cur := ""
		for _, w := range strings.Split(line[len(line)-len(strings.TrimLeft(line, " ")):], " ") {
			switch {
			case cur == "":
				cur = w
			case ansi.StringWidth(cur)+1+ansi.StringWidth(w) <= width:
				cur += " " + w
			default:
				out = append(out, cur)
				cur = strings.Repeat(" ", hang) + w
			}
		}
		out = append(out, cur)
	}
	return strings.Join(out, "\n")
}

// Style is how prose is rendered: the style $GLAMOUR_STYLE names where it
// is set (one of glamour's, such as "dark", "light" or "ascii"); glamour's
// ascii style, without colour, where $NO_COLOR is set;
// else glamour's dark style with the text, code blocks included, in the
// terminal's own colour, so that it reads on a light background as on a
// dark one, and inline code in colour alone. The terminal is not asked for its background: its answer
// would race the line editor for standard input. Prose starts at the left
// edge, as the rest of the output does.
func Style() gansi.StyleConfig {
	if name := os.Getenv("GLAMOUR_STYLE"); name != "" && name != styles.AutoStyle {
		if s, ok := styles.DefaultStyles[name]; ok {
			return *s
		}
	}
	s := styles.DarkStyleConfig
	s.Document.Color = nil
	s.CodeBlock.Color, s.CodeBlock.Chroma = nil, nil
	s.Code.Prefix, s.Code.Suffix, s.Code.BackgroundColor = "", "", nil // inline code: coloured, not padded
	if os.Getenv("NO_COLOR") != "" {
		s = styles.ASCIIStyleConfig
	}
	s.Document.Margin = nil
	return s
}

// Progress returns what draws a lessons' View.Progress on w, a terminal:
// " 30% [███████░░░░░░░░░░░░░░░░░] (12/40) what" on one line, redrawn in
// place, and cleared once done reaches total. A call with a total other than the bar's, or
// with fewer done than before, starts a new bar.
func Progress(w io.Writer) func(done, total int, what string) {
	var bar *progressbar.ProgressBar
	last, max := 0, 0
	return func(done, total int, what string) {
		if total <= 0 {
			return
		}
		if bar != nil && (total != max || done < last) {
			bar.Clear()
			bar = nil
		}
		if done >= total {
			if bar != nil {
				bar.Clear()
			}
			bar = nil
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(24),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(false), progressbar.OptionUseANSICodes(true),
				progressbar.OptionShowDescriptionAtLineEnd(),
				progressbar.OptionSetTheme(progressbar.Theme{Saucer: "█", SaucerPadding: "░", BarStart: "[", BarEnd: "]"}))
			max = total
		}
		last = done
		bar.Describe(what)
		bar.Set(done)
	}
}
