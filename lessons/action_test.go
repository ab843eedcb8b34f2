package lessons

import (
	"fmt"
	"slices"
	"testing"
	"testing/fstest"
)

// TestOptionalBehaviourFound: what only some actions have (problems they
// run, kernels they show, sizes they sweep, a launch, their results'
// kind, figures) is found through the optional interfaces, on the very
// pointers the Def was given, and not found on actions without it.
func TestOptionalBehaviourFound(t *testing.T) {
	own, other, more := &Problem{Name: "own"}, &Problem{Name: "other"}, &Problem{Name: "more"}
	sizes := []Size{{1 << 10}, {1 << 20}}
	tests := []struct {
		desc   string
		action Action

		problems []*Problem
		file     string   // the kernel file it shows from
		kernels  []string // nil: it shows none
		sweep    *sweepShape
		launch   string // the kernel it launches, "" for none
		records  string
		figures  []string
	}{
		{desc: "check step of the lesson's problem", action: &CheckStep{More: []*Problem{more}},
			problems: []*Problem{own, more}, records: "check"},
		{desc: "check step of another problem", action: &CheckStep{Problem: other},
			problems: []*Problem{other}, records: "check"},
		{desc: "sweep over sizes", action: &Sweep{Sizes: sizes, Impls: []string{"vadd_v1"}, Memory: true, Ladder: true},
			problems: []*Problem{own}, sweep: &sweepShape{impls: []string{"vadd_v1"}, sizes: sizes}, records: "bench",
			figures: []string{"A", "A memory", "A ladder"}},
		{desc: "sweep over threads per block", action: &Sweep{Problem: other, Sizes: sizes[:1], Blocks: []int{128, 256}},
			problems: []*Problem{other}, sweep: &sweepShape{problem: other, sizes: sizes[:1], blocks: []int{128, 256}}, records: "bench",
			figures: []string{"A"}},
		{desc: "kernels named", action: &ShowKernel{Names: []string{"vadd_v2"}}, kernels: []string{"vadd_v2"}, records: "bench"},
		{desc: "every version of a file", action: &ShowKernel{File: "vector_add.cu"}, file: "vector_add.cu",
			kernels: []string{"vadd_v1", "vadd_v2", "vadd_v3"}, records: "bench"},
		{desc: "run that launches a kernel", action: &Run{Kernel: "vadd_unguarded", Block: 256, Size: Size{1000}},
			launch: "vadd_unguarded", records: "bench"},
		{desc: "run that launches none", action: &Run{Name: "measure"}, records: "bench"},
		{desc: "exercise", action: &ExerciseStep{}, records: "bench"},
	}
	for _, tt := range tests {
		l, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n")}},
			Kernels: "vector_add.cu", Problem: own, Actions: map[string]Action{"A": tt.action}})
		if err != nil {
			t.Fatalf("%s: build: %v", tt.desc, err)
		}
		if l.Steps[0].Action != tt.action {
			t.Errorf("%s: the step holds %p, want the Def's pointer %p", tt.desc, l.Steps[0].Action, tt.action)
		}
		a := l.Steps[0].Action
		if got := problemsOf(a, l); !slices.Equal(got, tt.problems) {
			t.Errorf("%s: problemsOf = %v, want %v", tt.desc, names(got), names(tt.problems))
		}
		file, kernels, shows := kernelsOf(a, l)
		if shows != (tt.kernels != nil) || file != tt.file || !slices.Equal(kernels, tt.kernels) || !slices.Equal(l.StepKernels(0), tt.kernels) {
			t.Errorf("%s: kernelsOf = %q, %q, %v; StepKernels = %q; want %q, %q", tt.desc, file, kernels, shows, l.StepKernels(0), tt.file, tt.kernels)
		}
		sw, sweeps := sweepOf(a)
		switch {
		case sweeps != (tt.sweep != nil):
			t.Errorf("%s: sweepOf found %v, want %v", tt.desc, sweeps, tt.sweep != nil)
		case sweeps && fmt.Sprint(sw.swept()) != fmt.Sprint(*tt.sweep):
			t.Errorf("%s: swept = %v, want %v", tt.desc, sw.swept(), *tt.sweep)
		}
		overSizes, _ := l.StepSizes(0)
		overBlocks, at, _ := l.StepBlocks(0)
		if tt.sweep != nil && (tt.sweep.blocks == nil) != (overSizes != nil) || tt.sweep != nil && !slices.Equal(overBlocks, tt.sweep.blocks) ||
			overBlocks != nil && at.String() != tt.sweep.sizes[0].String() {
			t.Errorf("%s: StepSizes = %v, StepBlocks = %v at %v; want the sweep's %v", tt.desc, overSizes, overBlocks, at, tt.sweep)
		}
		kernel, _, _, launches := l.StepLaunch(0)
		if k, _, _ := launchOf(a); k != tt.launch || kernel != tt.launch || launches != (tt.launch != "") {
			t.Errorf("%s: launchOf = %q, StepLaunch = %q, %v; want %q", tt.desc, k, kernel, launches, tt.launch)
		}
		if got := recordsOf(a); got != tt.records {
			t.Errorf("%s: recordsOf = %q, want %q", tt.desc, got, tt.records)
		}
		if got := l.StepFigures(0); !slices.Equal(got, tt.figures) {
			t.Errorf("%s: StepFigures = %q, want %q", tt.desc, got, tt.figures)
		}
	}
}

func names(ps []*Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// TestLatestFindsTheStepByPointer: a step that reads another's results
// names it by the pointer its Def was given; an action of no step of the
// lesson is a programming error that Latest reports at once.
func TestLatestFindsTheStepByPointer(t *testing.T) {
	sweep, check := &Sweep{Sizes: []Size{{1}}}, &CheckStep{}
	results := `{"schema":"cudarepl-results/1","results":[` +
		`{"lesson":"x","step":"A","kind":"bench","variant":"v","size":"n=1","dims":[1],"dtype":"float32","gpu":"G","driver":"","cuda":"","date":"d","mode":"live"},` +
		`{"lesson":"x","step":"B","kind":"check","variant":"v","size":"n=1","dims":[1],"dtype":"float32","gpu":"G","driver":"","cuda":"","date":"d","mode":"live"}]}`
	l, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n\n## B\n\ntext\n")},
		"results/r.json": {Data: []byte(results)}}, Actions: map[string]Action{"A": sweep, "B": check}})
	if err != nil {
		t.Fatal(err)
	}
	env := Replay(fmt.Errorf("none"), View{})
	for _, tt := range []struct {
		a          Action
		step, kind string
	}{{sweep, "A", "bench"}, {check, "B", "check"}} {
		rs := env.Latest(l, tt.a)
		if len(rs) != 1 || rs[0].Step != tt.step || rs[0].Kind != tt.kind {
			t.Errorf("Latest(%s) = %+v, want the one %s result of step %s", tt.a.Kind(), rs, tt.kind, tt.step)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Latest of an action that is no step's did not panic")
		}
	}()
	env.Latest(l, &Sweep{Sizes: []Size{{1}}}) // equal to sweep, but not the Def's pointer
}
