package lessons

import (
	"fmt"
	"io"
	"strings"

	"cudarepl/plots"
)

// An Env's View says where what the lessons show goes; these are what
// they show it with.

func (v *View) printf(format string, args ...any) { fmt.Fprintf(v.Out, format, args...) }

// MarkdownWriter is an output that shows Markdown as it reads best there:
// a terminal's renders it (package internal/term makes one). Prose writes
// through it where a View's Out is one.
type MarkdownWriter interface {
	io.Writer
	// WriteMarkdown writes md rendered, and a newline; where it cannot,
	// it writes nothing and says why.
	WriteMarkdown(md string) error
}

// Prose prints md, a lesson's Markdown prose, and a newline: rendered
// where Out is a MarkdownWriter (a terminal), and as written elsewhere (a
// file, a pipe, a test), where Markdown reads as plain text.
func (v *View) Prose(md string) {
	if m, ok := v.Out.(MarkdownWriter); ok && m.WriteMarkdown(md) == nil {
		return
	}
	v.printf("%s\n", md)
}

// PrintTable shows t through ShowTable where a notebook set it, and prints
// it as text otherwise.
func (v *View) PrintTable(t *Table) {
	if v.ShowTable != nil {
		v.ShowTable(t)
		return
	}
	t.Write(v.Out)
}

// Figure shows fig (in the terminal, or in the notebook) and saves it
// under env.PlotDir, named after the lesson and step: for a Run step that
// draws what it measured.
func (v *View) Figure(l *Lesson, step string, fig plots.Figure) error {
	if v.ShowFigure == nil {
		v.printf("\n")
	}
	if err := v.figure(fig); err != nil {
		return err
	}
	return v.savePlot(l, step, fig)
}

// figure shows f: through ShowFigure, or as a terminal chart.
func (v *View) figure(f plots.Figure) error {
	if v.ShowFigure != nil {
		return v.ShowFigure(f)
	}
	return plots.Terminal(v.Out, f, v.width())
}

// savePlot writes fig under PlotDir, named after the lesson and step.
func (v *View) savePlot(l *Lesson, step string, fig plots.Figure) error {
	if v.PlotDir == "" {
		return nil
	}
	name := l.Folder() + "-" + slug(step)
	paths, err := plots.Save(fig, v.PlotDir, name)
	if err != nil {
		return err
	}
	v.printf("figure: %s\n", strings.Join(paths, ", "))
	return nil
}

func slug(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, s), "-")
}

func (v *View) width() int {
	if v.Width <= 0 {
		return 80
	}
	return v.Width
}

// canceled returns the context's error once the user has asked to stop.
func (v *View) canceled() error {
	if v.Ctx == nil {
		return nil
	}
	return v.Ctx.Err()
}

func (v *View) progress(done, total int, what string) {
	if v.Progress != nil {
		v.Progress(done, total, what)
	}
}
