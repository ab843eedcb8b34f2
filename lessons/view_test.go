package lessons

import (
	"bytes"
	"errors"
	"testing"
)

// markdownOut is a MarkdownWriter that marks what it renders, or fails.
type markdownOut struct {
	bytes.Buffer
	fail bool
}

func (m *markdownOut) WriteMarkdown(md string) error {
	if m.fail {
		return errors.New("cannot render")
	}
	m.WriteString("rendered: " + md + "\n")
	return nil
}

// TestProse: prose is rendered where the output renders Markdown (a
// terminal's), and written as it is elsewhere, or where rendering fails.
func TestProse(t *testing.T) {
	const md = "| a | b |\n| --- | --- |\n| `x` | 1 |"
	var plain bytes.Buffer
	(&View{Out: &plain}).Prose(md)
	rendering, failing := &markdownOut{}, &markdownOut{fail: true}
	(&View{Out: rendering}).Prose(md)
	(&View{Out: failing}).Prose(md)
	for _, tt := range []struct {
		desc, got, want string
	}{
		{"plain output", plain.String(), md + "\n"},
		{"a terminal's", rendering.String(), "rendered: " + md + "\n"},
		{"a terminal's that cannot render it", failing.String(), md + "\n"},
	} {
		if tt.got != tt.want {
			t.Errorf("Prose to %s wrote %q; want %q", tt.desc, tt.got, tt.want)
		}
	}
}
