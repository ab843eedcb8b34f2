package lessons

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"cudarepl/gpu"
	"cudarepl/kernels"
)

// TestCopiesCarryTheirOwn: a copy of an Env carries its edit, launch or
// view to the calls it is given to, and the Env it was copied from is
// unchanged; both share one session, so what the copy records the
// original has.
func TestCopiesCarryTheirOwn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		desc    string
		copy    func(e *Env) *Env
		carries func(e *Env) string // what an Env carries of it, "" for nothing
	}{
		{"edit", func(e *Env) *Env { return e.withEdit(Edit{Kernel: "vadd_v1", Code: "mine"}) },
			func(e *Env) string {
				if e.edit == nil {
					return ""
				}
				return e.edit.Kernel
			}},
		{"launch", func(e *Env) *Env { return e.withLaunch(64, Size{1000}) },
			func(e *Env) string {
				if b, s := e.Launch(); b != 0 || s != nil {
					return fmt.Sprint(b, s)
				}
				return ""
			}},
		{"sizes", func(e *Env) *Env { return e.WithView(View{Out: e.Out, Sizes: []Size{{1 << 20}}}) },
			func(e *Env) string { return fmt.Sprint(e.Sizes) }},
		{"Ctrl-C", func(e *Env) *Env { return e.WithView(View{Out: e.Out, Ctx: ctx}) },
			func(e *Env) string {
				if err := e.canceled(); err != nil {
					return err.Error()
				}
				return ""
			}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		e := liveEnv(&fakeDev{}, View{Out: &out})
		c := tt.copy(e)
		if got := tt.carries(c); got == "" || got == "[]" {
			t.Errorf("%s: the copy carries nothing", tt.desc)
		}
		if got := tt.carries(e); got != "" && got != "[]" {
			t.Errorf("%s: the original carries %q after the copy was made", tt.desc, got)
		}
		if c.Session != e.Session {
			t.Errorf("%s: the copy has a session of its own", tt.desc)
		}
		c.Record(Result{Step: "s", Kind: "bench", Variant: "v"})
		if len(e.Results.Results) != 1 {
			t.Errorf("%s: what the copy recorded is not the original's: %+v", tt.desc, e.Results.Results)
		}
	}
}

// TestEditDoesNotOutliveItsCall: a Run step run with the learner's edit
// (RunEdited) launches their kernel with their launch and records its
// results as theirs; the same step run after it, in the same Env, runs the
// course's as written, whether the edited run passed or failed.
func TestEditDoesNotOutliveItsCall(t *testing.T) {
	src, err := kernels.Source("vector_add.cu")
	if err != nil {
		t.Fatal(err)
	}
	orig, err := kernels.Function(src, "vadd_unguarded")
	if err != nil {
		t.Fatal(err)
	}
	mine := Edit{Kernel: "vadd_unguarded", Code: strings.Replace(orig, "{", "{ // mine\n", 1), Block: 64, Size: Size{100}}
	type seen struct {
		kernel, variant string
		block           int
		size            string
	}
	var got []seen
	fail := false
	run := &Run{Kernel: "vadd_unguarded", Block: 256, Size: Size{1000}, F: func(env *Env, l *Lesson, step string) error {
		block, size := env.Launch()
		k, err := env.FileKernel("vector_add.cu", "vadd_unguarded")
		if err != nil {
			return err
		}
		env.Record(Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: "vadd_unguarded", Size: size.String()})
		var kept Result // as the session keeps it
		for _, r := range env.Results.Results {
			if r.Size == size.String() {
				kept = r
			}
		}
		got = append(got, seen{k.Image, kept.Variant, block, size.String()})
		if fail {
			return errors.New("planted failure")
		}
		return nil
	}}
	l, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n")}},
		Kernels: "vector_add.cu", Actions: map[string]Action{"A": run}})
	if err != nil {
		t.Fatal(err)
	}
	course := seen{"course", "vadd_unguarded", 256, "n=1000"}
	theirs := seen{"yours", "vadd_unguarded (yours)", 64, "n=100"}
	for _, tt := range []struct {
		desc  string
		calls []string // "edited", "edited, failing" or "as written", in turn
		want  []seen
	}{
		{"as written", []string{"as written"}, []seen{course}},
		{"edited, then as written", []string{"edited", "as written"}, []seen{theirs, course}},
		{"edited and failing, then as written", []string{"edited, failing", "as written"}, []seen{theirs, course}},
		{"as written, edited, as written", []string{"as written", "edited", "as written"}, []seen{course, theirs, course}},
	} {
		var out bytes.Buffer
		env := liveEnv(&fakeDev{}, View{Out: &out})
		// Both kernels are loaded, as a session that ran each once has them.
		env.kernels[src.Name+"\x00vadd_unguarded\x00"+src.Code] = gpu.Kernel{Image: "course"}
		yours := mine.in(src)
		env.kernels[yours.Name+"\x00vadd_unguarded\x00"+yours.Code] = gpu.Kernel{Image: "yours"}
		got = nil
		for _, call := range tt.calls {
			fail = call == "edited, failing"
			if call == "as written" {
				err = l.RunStep(env, 0)
			} else {
				err = env.RunEdited(l, 0, mine)
			}
			if (err != nil) != fail {
				t.Errorf("%s: %s = %v", tt.desc, call, err)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: the step saw %v, want %v", tt.desc, got, tt.want)
		}
	}
}
