package lessons

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/fstest"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/numeric"
	"cudarepl/nvrtc"
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

// unguardedEdit is a learner's version of vector_add.cu's vadd_unguarded.
func unguardedEdit(t *testing.T) Edit {
	src, err := kernels.Source("vector_add.cu")
	if err != nil {
		t.Fatal(err)
	}
	orig, err := kernels.Function(src, "vadd_unguarded")
	if err != nil {
		t.Fatal(err)
	}
	return Edit{Kernel: "vadd_unguarded", Code: strings.Replace(orig, "{", "{ // mine\n", 1)}
}

// loadBoth makes env's session one that has compiled and loaded both the
// course's kernel and the learner's version of it, ed, as a session that
// ran each once has them: nothing needs NVRTC or a GPU. The course's is
// the Kernel whose Image is "course", the learner's "yours".
func loadBoth(env *Env, ed Edit) {
	src, _ := kernels.Source("vector_add.cu")
	yours := ed.in(src)
	env.images[yours.Name+"\x00"+yours.Code+"\x00"] = &nvrtc.Image{}
	env.kernels[src.Name+"\x00"+ed.Kernel+"\x00"+src.Code] = gpu.Kernel{Image: "course"}
	env.kernels[yours.Name+"\x00"+ed.Kernel+"\x00"+yours.Code] = gpu.Kernel{Image: "yours"}
}

// TestEditDoesNotOutliveItsCall: a Run step run with the learner's edit
// (RunEdited) launches their kernel with their launch and records its
// results as theirs; the same step run after it, in the same Env, runs the
// course's as written, whether the edited run passed or failed.
func TestEditDoesNotOutliveItsCall(t *testing.T) {
	mine := unguardedEdit(t)
	mine.Block, mine.Size = 64, Size{100}
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
		loadBoth(env, mine)
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

// editCase loads vadd_unguarded whenever it is asked for its ops, as a
// case whose library impl launches a kernel of the lesson's does, and
// notes which it got.
type editCase struct {
	env  *Env
	seen *[]string
}

func (c editCase) Ops(Impl, gpu.Kernel, int) ([]gpu.Op, error) {
	k, err := c.env.FileKernel("vector_add.cu", "vadd_unguarded")
	if err != nil {
		return nil, err
	}
	*c.seen = append(*c.seen, k.Image)
	return []gpu.Op{gpu.Memset{}}, nil
}
func (editCase) Poison() error                      { return nil }
func (editCase) Check() (numeric.CheckStats, error) { return numeric.CheckStats{}, nil }
func (editCase) Free()                              {}

// TestTryLaunchedCarriesTheEdit: a learner's version of a kernel that a
// library impl launches is checked, and timed, with their kernel, and the
// course's is timed with the course's, in one call; a check after it
// loads the course's again.
func TestTryLaunchedCarriesTheEdit(t *testing.T) {
	mine := unguardedEdit(t)
	mine.Size = Size{8}
	var seen []string
	var out bytes.Buffer
	env := liveEnv(&fakeDev{}, View{Out: &out})
	p := &Problem{Name: "fake", DType: "float32", Unit: "GB/s", CheckSizes: []Size{{4}},
		Impls:  []Impl{{Name: "lib", Library: true, Kernels: []string{"vadd_unguarded"}}},
		Setup:  func(env *Env, s Size) (Case, error) { return editCase{env, &seen}, nil },
		Memory: func(Size) Memory { return Memory{Device: 1 << 10} },
		Work:   func(s Size) float64 { return float64(s[0]) }}
	l, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n")}},
		Kernels: "vector_add.cu", Problem: p})
	if err != nil {
		t.Fatal(err)
	}
	loadBoth(env, mine)

	if err := env.TryEdit(l, mine); err != nil {
		t.Fatalf("TryEdit = %v\n%s", err, out.String())
	}
	if err := (&CheckStep{}).Do(env, l, "A"); err != nil {
		t.Fatalf("the check after it = %v\n%s", err, out.String())
	}
	// The learner's check, the course's timing, theirs; then the check.
	if want := "yours course yours course"; strings.Join(seen, " ") != want {
		t.Errorf("the case loaded %v, want %s", seen, want)
	}
	var variants []string
	for _, r := range env.Results.Results {
		variants = append(variants, r.Variant)
	}
	if want := "lib (yours), lib"; strings.Join(variants, ", ") != want {
		t.Errorf("results kept: %v, want %s", variants, want)
	}
	if !strings.Contains(out.String(), "lib: ") || !strings.Contains(out.String(), "with yours") {
		t.Errorf("TryEdit's output:\n%s", out.String())
	}
}

// TestCompileStops: Ctrl-C (a cancelled context) stops a compile at once;
// without one it compiles.
func TestCompileStops(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := nvrtc.Source{Name: "k.cu", Code: "extern \"C\" __global__ void k_stops(int* x) { x[0] = 1; }\n"}
	stopped := Replay(nil, View{Out: io.Discard, Ctx: ctx})
	if _, err := stopped.Compile(src); !errors.Is(err, ErrStopped) {
		t.Errorf("a compile after Ctrl-C = %v, want ErrStopped", err)
	}
	if _, err := Replay(nil, View{Out: io.Discard}).Compile(src); err != nil {
		t.Errorf("a compile with no Ctrl-C: %v", err)
	}
}

// TestOutOfMemoryBudget: a size refused under a worker's budget says so.
func TestOutOfMemoryBudget(t *testing.T) {
	for _, c := range []struct {
		e    OutOfMemoryError
		want string
	}{
		{OutOfMemoryError{What: "vector add n=2^30", Where: "device", Need: 12 << 30, Free: 8 << 30}, "vector add n=2^30 needs 12.0 GiB of device memory; 8.0 GiB is free"},
		{OutOfMemoryError{What: "vector add n=2^30", Where: "device", Need: 12 << 30, Free: 6 << 30, Budget: "8GiB"},
			"vector add n=2^30 needs 12.0 GiB of device memory; 6.0 GiB is free of this worker's budget of 8GiB (CUDAREPL_MEM_LIMIT)"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q; want %q", got, c.want)
		}
	}
}
