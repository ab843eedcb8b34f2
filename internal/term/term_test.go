package term

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

const prose = "A launch costs `cuLaunchKernel`'s time.\n\n| N | launches | graph |\n| --- | --- | --- |\n| 1 | 274 | 260 |\n| 1000 | 237 | 981 |\n"

// TestMarkdownRendersProse: on a terminal, a Markdown table is drawn and
// code loses its backticks; the text wraps at the width given.
func TestMarkdownRendersProse(t *testing.T) {
	t.Setenv("GLAMOUR_STYLE", "")
	t.Setenv("NO_COLOR", "1") // glamour's ascii style: no escape codes to compare around
	var b bytes.Buffer
	if err := NewMarkdown(&b, 60).WriteMarkdown(prose + "\n" + strings.Repeat("word ", 30)); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, bad := range []string{"| --- |", "`cuLaunchKernel`", "\x1b["} {
		if strings.Contains(got, bad) {
			t.Errorf("rendered prose holds %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"cuLaunchKernel's time", "1000", "981"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered prose lacks %q:\n%s", want, got)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		if n := len([]rune(strings.TrimRight(line, " "))); n > 60 {
			t.Errorf("a rendered line has %d columns, more than the terminal's 60: %q", n, line)
		}
	}
	if !strings.HasSuffix(got, "\n") || strings.HasSuffix(got, "\n\n") || strings.HasPrefix(got, "\n") {
		t.Errorf("rendered prose should end with one newline and start with text: %q", got)
	}
}

func TestStyle(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("GLAMOUR_STYLE", "")
	if s := Style(); s.Document.Color != nil || s.CodeBlock.Color != nil || s.Heading.Color == nil || s.Document.Margin != nil {
		t.Errorf("the default style should leave text and code in the terminal's colour, colour headings, and keep no margin: text %v, code %v, headings %v, margin %v",
			s.Document.Color, s.CodeBlock.Color, s.Heading.Color, s.Document.Margin)
	}
	t.Setenv("GLAMOUR_STYLE", "light")
	if s := Style(); s.Document.Color == nil || *s.Document.Color != "234" {
		t.Errorf("GLAMOUR_STYLE=light: text colour %v, want glamour's light style's 234", s.Document.Color)
	}
}

// TestOutputOffTerminal: where the output is not a terminal, prose goes
// through unchanged, so transcripts stay plain.
func TestOutputOffTerminal(t *testing.T) {
	var b bytes.Buffer
	if Output(&b) != &b {
		t.Error("Output(a buffer) is not the buffer itself")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || Output(f) != f {
		t.Error("a file is taken for a terminal")
	}
	if Width(&b) != 80 {
		t.Errorf("Width(a buffer) = %d, want 80", Width(&b))
	}
}

// TestProgress: the bar shows the count and what is running, redrawn in
// place, and is cleared when done reaches total; a new total starts anew.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := Progress(&b)
	p(0, 40, "softmax_v1 4 × 3")
	p(12, 40, "softmax_v2 8 × 257")
	drawn := b.String()
	for _, want := range []string{"12/40", "█", "░", "softmax_v2 8 × 257"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the bar lacks %q: %q", want, drawn)
		}
	}
	p(40, 40, "")
	if got := b.String(); !strings.HasSuffix(got, "\x1b[2K\r") {
		t.Errorf("the bar is not cleared at the end: %q", got[len(drawn):])
	}
	b.Reset()
	p(1, 3, "next")
	if got := b.String(); !strings.Contains(got, "1/3") || !strings.Contains(got, "next") {
		t.Errorf("a new total does not start a new bar: %q", got)
	}
	p(0, 0, "nothing") // no total: nothing to draw
}

// TestWrap: prose wraps at spaces, not after a hyphen or a code span,
// with a list item's lines under its text; tables and code stay whole.
func TestWrap(t *testing.T) {
	t.Setenv("GLAMOUR_STYLE", "")
	t.Setenv("NO_COLOR", "")
	md := "cudarepl launches from Go, through purego, with no cgo in between. Is\nthat slower than C? The runtime's own test (`gpu.test -test.run\nTestGPUFigures`) times the same 200 launches from a C program built with\nnvcc, interleaved with Go's.\n\n" +
		"- a list item that is long enough to wrap around the terminal when the terminal is narrow\n\n" +
		"| N | launched, each synchronised | graph against launches |\n| --- | --- | --- |\n| 1000 | 95 (10504 µs) | 4.13× |\n\n" +
		"```\nextern \"C\" __global__ void empty() {} // a code line longer than the terminal is wide\n```\n"
	var b bytes.Buffer
	if err := NewMarkdown(&b, 61).WriteMarkdown(md); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(ansi.Strip(b.String()), "\n")
	for _, want := range []string{
		"cudarepl launches from Go, through purego, with no cgo in",
		"(gpu.test -test.run TestGPUFigures) times the same 200",
		"• a list item that is long enough to wrap around the",
		"  terminal when the terminal is narrow",
		" 1000 │ 95 (10504 µs)               │ 4.13×",
		"  extern \"C\" __global__ void empty() {} // a code line longer than the terminal is wide",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("rendered prose lacks the line %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "test.run") || strings.HasSuffix(l, "-") {
			t.Errorf("a line broken at a hyphen: %q\n%s", l, strings.Join(lines, "\n"))
		}
		if n := ansi.StringWidth(l); n > 60 && !strings.ContainsAny(l, "│┼") && !strings.HasPrefix(l, "  ") {
			t.Errorf("a prose line of %d columns, past the 60 a 61-column terminal gets: %q", n, l)
		}
	}
}

func TestUnbreak(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"one\ntwo\n\nthree", "one two\n\nthree"},
		{"- item\n  goes on\n- next", "- item goes on\n- next"},
		{"text\n| a | b |\n| --- | --- |\n| 1 | 2 |\nafter", "text\n| a | b |\n| --- | --- |\n| 1 | 2 |\nafter"},
		{"# Title\ntext\nmore", "# Title\ntext more"},
		{"```\ncode\nmore code\n```\ntext\nmore", "```\ncode\nmore code\n```\ntext more"},
		{"    indented\n    code", "    indented\n    code"},
		{"text\n    goes on", "text goes on"},
	} {
		if got := unbreak(tt.in); got != tt.want {
			t.Errorf("unbreak(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
