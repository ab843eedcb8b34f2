// Package notebook runs the course in Jupyter notebooks on the GoNB kernel.
//
// A lesson's notebook is generated from the lesson (Generate): its prose as
// Markdown cells, and a code cell per step that calls Step, which runs that
// step and shows its tables as HTML and its figures inline. Check judges a
// kernel the learner writes as a Go string, exactly as "cudarepl check"
// does. Each cell is its own process with its own GPU worker, so a kernel
// that faults ends its cell with a message and the next cell starts afresh.
// Without a GPU the cells replay the results recorded with the lesson.
// With $CUDAREPL_REMOTE set where Jupyter runs (a host, as for cudarepl
// --remote), each cell's worker runs on that host over ssh: the notebook
// stays here, and its kernels compile and run there.
package notebook

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/janpfeifer/gonb/gonbui"

	"cudarepl/fuse"
	"cudarepl/lessons"
	_ "cudarepl/lessons/all" // every lesson, registered
	"cudarepl/lessons/fusecmd"
	"cudarepl/plots"
	_ "cudarepl/worker" // a cell's program is its own GPU worker
)

// Step runs step n (from 1) of the lesson named slug in this cell.
func Step(slug string, n int) { report(inCell().Step(slug, n)) }

// Check judges code, the learner's copy of the lesson's exercise (a kernel,
// or lesson 3's schedule), as cudarepl check judges it.
//
// A verdict that the learner's work does not pass is the cell's answer,
// already printed: it is not reported again as an error.
func Check(slug, code string) { report(answered(inCell().Check(slug, code))) }

// answered is err, but nil for a verdict that the learner's work does not
// pass: the verdict is printed already, and is the cell's answer, not an
// error of the cell.
func answered(err error) error {
	if _, failed := errors.AsType[*lessons.VerdictError](err); failed {
		return nil
	}
	return err
}

// Try checks the learner's version of one of the lesson's kernels, code,
// launched with block threads per block, exactly as the course's kernel
// name is checked, and times it beside the course's at size (as the
// command line writes sizes: "2^26", "4096x4096x4096"). Unchanged, it
// says what the compiler made of the course's kernel, whose source the
// cell holds. A verdict that the learner's version fails is the cell's
// answer, printed once, as Check's is.
func Try(slug, name, code string, block int, size string) {
	report(answered(inCell().Try(slug, name, code, block, size)))
}

// StepWith runs step n (from 1) of the lesson, a step that launches the
// kernel name, with code in its place, launched with block threads per
// block at size: the step's own checks judge it. Unchanged, it runs the
// step as written.
func StepWith(slug string, n int, name, code string, block int, size string) {
	report(answered(inCell().StepWith(slug, n, name, code, block, size)))
}

// Bench runs step n of the lesson, a sweep, at sizes (as the command line
// writes them) instead of its own.
func Bench(slug string, n int, sizes ...string) { report(inCell().Bench(slug, n, sizes...)) }

// Blocks runs step n of the lesson, a sweep over threads per block, at
// blocks instead of its own.
func Blocks(slug string, n int, blocks ...int) { report(inCell().Blocks(slug, n, blocks...)) }

// Sanitize judges code as Check does, with the kernel run under
// compute-sanitizer's tool ("memcheck", "racecheck", "synccheck" or
// "initcheck"), and lists what the sanitizer found.
func Sanitize(slug, tool, code string) { report(inCell().Sanitize(slug, tool, code)) }

// Profile shows why each version of the lesson's sweeps is as fast as it
// is, as the REPL's "profile" does: Nsight Compute's counters for one run
// of each (all of them, or the variants named), measured on a GPU where
// ncu is installed (where it is not, the cell says what to install), and
// without a GPU the ones recorded with the lesson.
func Profile(slug string, variants ...string) { report(inCell().Profile(slug, variants...)) }

// Fuse is runtime fusion, as the REPL's "fuse" does it: the elementwise
// expression (over named fp32 inputs, e.g. "sigmoid(a + b*c)") written as
// one kernel and as one kernel an operation, compiled with NVRTC, and on a
// GPU checked against float64 and timed beside the copy at n elements.
func Fuse(expr string, n int) { report(inCell().Fuse(expr, n)) }

// report waits until GoNB has taken everything the cell displayed (display
// data still in GoNB's pipe when the cell's program exits can be lost, and
// then a figure is missing from the cell), and ends a cell that failed with
// one line on stderr.
func report(err error) {
	gonbui.Sync() // a no-op outside a notebook
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %s\n", lessons.Message(err))
	}
}

// Cell is where a cell's results go. The zero Cell prints everything as
// text to standard output.
type Cell struct {
	Out    io.Writer                  // text; os.Stdout when nil
	Table  func(t *lessons.Table)     // nil: tables as text
	Figure func(f plots.Figure) error // nil: figures as terminal charts
	Env    *lessons.Env               // reused when set; else each call opens the GPU
}

// inCell is the Cell of a GoNB cell: HTML tables and PNG figures when in a
// notebook, text otherwise.
func inCell() *Cell {
	c := &Cell{Out: os.Stdout}
	if gonbui.IsNotebook {
		c.Table = func(t *lessons.Table) { gonbui.DisplayHTML(t.HTML()) }
		c.Figure = func(f plots.Figure) error {
			png, err := plots.Encode(f, "png")
			if err == nil {
				gonbui.DisplayPNG(png)
			}
			return err
		}
	}
	return c
}

// Fuse runs fusecmd.Run in the cell's Env; an expression that does not
// parse is refused before any GPU is opened.
func (c *Cell) Fuse(expr string, n int) error {
	if _, err := fuse.Parse(expr); err != nil {
		return err
	}
	env, done, err := c.env()
	if err != nil {
		return err
	}
	defer done()
	return fusecmd.Run(env, expr, n)
}

// env returns the Cell's Env, or opens one (live, or replay without a GPU)
// with a function that closes it.
func (c *Cell) env() (*lessons.Env, func(), error) {
	out := c.Out
	if out == nil {
		out = os.Stdout
	}
	if c.Env != nil {
		return c.Env, func() {}, nil
	}
	env, err := lessons.Open(lessons.Options{View: lessons.View{Out: out, Width: 100, ShowTable: c.Table, ShowFigure: c.Figure}})
	if err != nil {
		return nil, nil, err
	}
	return env, func() { env.Close() }, nil
}

// in finds the lesson named slug, lets ready turn down what cannot run
// before any GPU is opened (nil accepts everything), and runs do in the
// cell's Env.
func (c *Cell) in(slug string, ready func(l *lessons.Lesson) error, do func(l *lessons.Lesson, env *lessons.Env) error) error {
	l, err := lessons.Find(slug)
	if err != nil {
		return err
	}
	if ready != nil {
		if err := ready(l); err != nil {
			return err
		}
	}
	env, done, err := c.env()
	if err != nil {
		return err
	}
	defer done()
	return do(l, env)
}

// stepIn says whether lesson l has a step n (from 1).
func stepIn(l *lessons.Lesson, n int) error {
	if n < 1 || n > len(l.Steps) {
		return fmt.Errorf("%s has steps 1 to %d, not %d", l.Slug, len(l.Steps), n)
	}
	return nil
}

// Step runs step n (from 1) of the lesson named slug: its action, without
// the prose, which the notebook holds as Markdown.
func (c *Cell) Step(slug string, n int) error {
	return c.in(slug, func(l *lessons.Lesson) error { return stepIn(l, n) }, func(l *lessons.Lesson, env *lessons.Env) error {
		s := l.Steps[n-1]
		if s.Action == nil {
			return nil
		}
		return s.Action.Do(env, l, s.Title)
	})
}

// Check judges code's exercise kernel like the version the exercise names.
func (c *Cell) Check(slug, code string) error { return c.judge(slug, "", code) }

// Try checks and times code as the learner's version of kernel name;
// unchanged, it reports what the compiler made of the course's.
func (c *Cell) Try(slug, name, code string, block int, size string) error {
	sizes, err := lessons.ParseSizes([]string{size})
	if err != nil {
		return err
	}
	return c.in(slug, nil, func(l *lessons.Lesson, env *lessons.Env) error {
		err := env.TryEdit(l, lessons.Edit{Kernel: name, Code: code, File: name + " in your cell", Block: block, Size: sizes[0]})
		if errors.Is(err, lessons.ErrUnchanged) {
			return l.KernelReport(env, name) // the cell holds the source already
		}
		return err
	})
}

// StepWith runs step n with the learner's version of kernel name.
func (c *Cell) StepWith(slug string, n int, name, code string, block int, size string) error {
	sizes, err := lessons.ParseSizes([]string{size})
	if err != nil {
		return err
	}
	return c.in(slug, func(l *lessons.Lesson) error { return stepIn(l, n) }, func(l *lessons.Lesson, env *lessons.Env) error {
		return env.RunEdited(l, n-1, lessons.Edit{Kernel: name, Code: code, File: name + " in your cell", Block: block, Size: sizes[0]})
	})
}

// Bench runs step n, a sweep, at sizes; at its own sizes, as written.
func (c *Cell) Bench(slug string, n int, sizes ...string) error {
	parsed, err := lessons.ParseSizes(sizes)
	if err != nil {
		return err
	}
	var own []lessons.Size
	ready := func(l *lessons.Lesson) error {
		if err := stepIn(l, n); err != nil {
			return err
		}
		var ok bool
		if own, ok = l.StepSizes(n - 1); !ok {
			return fmt.Errorf("%s step %d is not a sweep over sizes", l.Slug, n)
		}
		return nil
	}
	return c.in(slug, ready, func(l *lessons.Lesson, env *lessons.Env) error {
		if fmt.Sprint(parsed) != fmt.Sprint(own) {
			if !env.Live() {
				fmt.Fprintf(env.Out, "No GPU here: replay shows the sizes recorded on the reference GPU; yours would be measured on a GPU.\n")
			}
			v := env.View
			v.Sizes = parsed
			env = env.WithView(v) // this cell's sizes, not the next cell's
		}
		s := l.Steps[n-1]
		return s.Action.Do(env, l, s.Title)
	})
}

// Blocks runs step n, a sweep over block sizes, at blocks; at its own, as
// written.
func (c *Cell) Blocks(slug string, n int, blocks ...int) error {
	var own []int
	ready := func(l *lessons.Lesson) error {
		if err := stepIn(l, n); err != nil {
			return err
		}
		var ok bool
		if own, _, ok = l.StepBlocks(n - 1); !ok {
			return fmt.Errorf("%s step %d is not a sweep over block sizes", l.Slug, n)
		}
		if len(blocks) == 0 {
			return fmt.Errorf("no block sizes given: name at least one, such as 256")
		}
		for _, b := range blocks {
			if err := lessons.ValidBlock(b); err != nil {
				return err
			}
		}
		return nil
	}
	return c.in(slug, ready, func(l *lessons.Lesson, env *lessons.Env) error {
		if !slices.Equal(blocks, own) {
			if !env.Live() {
				fmt.Fprintf(env.Out, "No GPU here: replay shows the block sizes recorded on the reference GPU; yours would be measured on a GPU.\n")
			}
			v := env.View
			v.Blocks = blocks
			env = env.WithView(v) // this cell's blocks, not the next cell's
		}
		s := l.Steps[n-1]
		return s.Action.Do(env, l, s.Title)
	})
}

// Profile profiles the lesson's ladders, or the variants named.
func (c *Cell) Profile(slug string, variants ...string) error {
	return c.in(slug, nil, func(l *lessons.Lesson, env *lessons.Env) error {
		return env.Profile(l, lessons.ProfileOptions{Variants: variants})
	})
}

// Sanitize is Check under compute-sanitizer's tool.
func (c *Cell) Sanitize(slug, tool, code string) error { return c.judge(slug, tool, code) }

func (c *Cell) judge(slug, tool, code string) error {
	ready := func(l *lessons.Lesson) error {
		if l.Exercise == nil {
			return fmt.Errorf("%s has no exercise", l.Slug)
		}
		return nil
	}
	return c.in(slug, ready, func(l *lessons.Lesson, env *lessons.Env) error {
		if tool != "" {
			return env.Sanitize(tool, func(env *lessons.Env) error { return judgeIn(env, l, code) })
		}
		return judgeIn(env, l, code)
	})
}

// judgeIn judges code as l's exercise in env.
func judgeIn(env *lessons.Env, l *lessons.Lesson, code string) error {
	v, err := env.Judge(l, lessons.Submission{File: l.Exercise.File, Code: code})
	switch {
	case err != nil:
		return err
	case v.Judged && !v.Passed():
		return &lessons.VerdictError{Verdict: v}
	}
	return nil
}
