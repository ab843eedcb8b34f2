package lessons

import (
	"fmt"
	"testing"
	"testing/fstest"

	"cudarepl/gpu"
	"cudarepl/plots"
)

// TestLaunchedBlock: a point's block is the launch its ops made of the
// impl's kernel, where they made it one way; else the block asked for.
func TestLaunchedBlock(t *testing.T) {
	k, other := gpu.Kernel{Name: "softmax_v5"}, gpu.Kernel{Name: "scale_h"}
	launch := func(k gpu.Kernel, dims ...int) gpu.Op { return gpu.Launch{Kernel: k, Block: gpu.Dim(dims...)} }
	for _, tc := range []struct {
		desc  string
		ops   []gpu.Op
		k     gpu.Kernel
		block int
		want  int
	}{
		{"the case chose 1024 threads", []gpu.Op{launch(k, 1024)}, k, 256, 1024},
		{"a 2-D block counts its threads", []gpu.Op{launch(k, 32, 8)}, k, 128, 256},
		{"as a pointer", []gpu.Op{&gpu.Launch{Kernel: k, Block: gpu.Dim(512)}}, k, 256, 512},
		{"launched twice alike", []gpu.Op{launch(k, 64), launch(other, 256), launch(k, 64)}, k, 256, 64},
		{"launched two ways", []gpu.Op{launch(k, 64), launch(k, 128)}, k, 256, 256},
		{"not launched by these ops", []gpu.Op{launch(other, 1024)}, k, 256, 256},
		{"a library impl has no block", []gpu.Op{launch(k, 1024)}, k, 0, 0},
		{"no kernel", []gpu.Op{launch(k, 1024)}, gpu.Kernel{}, 256, 256},
	} {
		if got := launchedBlock(tc.ops, tc.k, tc.block); got != tc.want {
			t.Errorf("%s: launchedBlock = %d, want %d", tc.desc, got, tc.want)
		}
	}
}

// TestLaunchedOnly: a point that never launched shows no block.
func TestLaunchedOnly(t *testing.T) {
	rs := launchedOnly([]Result{{Block: 256, MedianMs: 1}, {Block: 256, Outcome: Refused}, {Block: 256, Outcome: OutOfMemory},
		{Block: 256, Outcome: Skipped}, {Block: 256, Outcome: TimedOut}})
	for i, want := range []int{256, 0, 0, 0, 256} {
		if rs[i].Block != want {
			t.Errorf("result %d (%q): block %d, want %d", i, rs[i].Outcome, rs[i].Block, want)
		}
	}
}

// TestSeriesStyles: each series keeps one style in every figure of a
// lesson, series drawn together differ in colour and in marker, and a
// sweep at one size (bars) takes no colour from them.
func TestSeriesStyles(t *testing.T) {
	p := &Problem{Name: "add", Impls: []Impl{{Name: "v1"}, {Name: "v2"}, {Name: "v3"}, {Name: "c1"}, {Name: "c2"}, {Name: "lib", Library: true}}}
	sweep := func(impls []string, sizes ...Size) Action { return &Sweep{Title: "Add", Impls: impls, Sizes: sizes} }
	l := &Lesson{Slug: "fake", Problem: p, Steps: []Step{
		{Title: "One size", Action: sweep([]string{"c2", "c1", "v3"}, Size{4})},
		{Title: "Ladder", Action: sweep([]string{"v1", "v2", "v3", "lib"}, Size{4}, Size{8})},
		{Title: "Controls", Action: sweep([]string{"v2", "c1", "c2", "v3"}, Size{4}, Size{8})},
	}}
	styles := seriesStyles(l)
	for _, fig := range l.Steps[1:] {
		impls := fig.Action.(*Sweep).Impls
		for i, a := range impls {
			for _, b := range impls[i+1:] {
				if styles[a].Colour == styles[b].Colour || styles[a].Marker == styles[b].Marker {
					t.Errorf("%s: %s and %s look alike: %+v, %+v", fig.Title, a, b, styles[a], styles[b])
				}
			}
		}
	}
	if got := fmt.Sprint(styles["v1"], styles["v2"], styles["v3"], styles["lib"]); got != "{0 0} {1 1} {2 2} {3 3}" {
		t.Errorf("the ladder's styles are %s, want the first four, in order", got)
	}
	seen := map[plots.Style]string{}
	for name, st := range styles {
		if other, dup := seen[st]; dup {
			t.Errorf("%s and %s have one style, %+v, in one lesson", name, other, st)
		}
		seen[st] = name
	}
}

// TestSeriesStylesFromRecordings: a step that measures a sweep inside a
// Run (a control measured on its own) is known by what was recorded for
// it; what else a step records is no series.
func TestSeriesStylesFromRecordings(t *testing.T) {
	bench := `{"lesson":"x","step":"%s","kind":"bench","variant":"%s","size":"n=%d","dims":[%d],"gpu":"G","date":"2026-11-22","mode":"live"}`
	var rs string
	for _, r := range []struct {
		step, variant string
		n             int
	}{{"Ladder", "v1", 4}, {"Ladder", "v2", 4}, {"Ladder", "v1", 8}, {"Ladder", "v2", 8},
		{"Own", "v2", 4}, {"Own", "c1", 4}, {"Own", "c1", 8}, {"Own", "total", 8}} {
		if rs != "" {
			rs += ","
		}
		rs += fmt.Sprintf(bench, r.step, r.variant, r.n, r.n)
	}
	p := &Problem{Name: "add", Impls: []Impl{{Name: "v1"}, {Name: "v2"}, {Name: "c1"}}}
	l, err := build(Def{Slug: "x", Problem: p, Actions: map[string]Action{"Own": &Run{Name: "measure", F: func(*Env, *Lesson, string) error { return nil }}},
		Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## Ladder\n\ntext\n\n## Own\n\ntext\n")},
			"results/r.json": {Data: []byte(`{"schema":"cudarepl-results/1","results":[` + rs + `]}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	styles := seriesStyles(l)
	if styles["c1"].Colour == styles["v2"].Colour || styles["c1"].Marker == styles["v2"].Marker {
		t.Errorf("c1 %+v looks like v2 %+v, which its step draws beside it", styles["c1"], styles["v2"])
	}
	if _, ok := styles["total"]; ok {
		t.Errorf("total, no variant of the problem, has a style: %+v", styles["total"])
	}
}

// TestLogX: sizes chosen as powers of two, or spanning 16× or more, are
// drawn on a log axis; a few sizes a step apart on a linear one.
func TestLogX(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want bool
	}{
		{[]float64{1, 2, 4}, true},
		{[]float64{128, 32768}, true},
		{[]float64{1000, 2000, 3000, 4000}, false},
		{[]float64{1000, 1e6}, true},
		{[]float64{4096}, true},
	} {
		if got := logX(tc.xs); got != tc.want {
			t.Errorf("logX(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// TestDrawnAsBaseline: a library impl is drawn as a baseline beside
// kernels; where every impl is a library call, none is.
func TestDrawnAsBaseline(t *testing.T) {
	mixed := &Problem{Impls: []Impl{{Name: "k"}, {Name: "lib", Library: true}}}
	copies := &Problem{Impls: []Impl{{Name: "pageable", Library: true}, {Name: "pinned", Library: true}}}
	for _, tc := range []struct {
		p    *Problem
		impl Impl
		want bool
	}{
		{mixed, mixed.Impls[0], false},
		{mixed, mixed.Impls[1], true},
		{copies, copies.Impls[1], false},
	} {
		if got := drawnAsBaseline(tc.p, tc.impl); got != tc.want {
			t.Errorf("%s: drawnAsBaseline = %v, want %v", tc.impl.Name, got, tc.want)
		}
	}
}

// TestMemoryFigureNeeds: a size out of memory in a memory figure is a
// cross labelled with what it would need; in a figure of what was
// measured it has no value.
func TestMemoryFigureNeeds(t *testing.T) {
	p := &Problem{Name: "attention", Impls: []Impl{{Name: "chain"}}}
	ok := Result{Variant: "chain", Size: "S=1024", Dims: []int{1024}, Throughput: 60, PeakMem: 3 << 30, MedianMs: 1, Unit: "TFLOP/s", GPU: "G"}
	oom := Result{Variant: "chain", Size: "S=2048", Dims: []int{2048}, Outcome: OutOfMemory, NeedMem: 257 << 30, Unit: "TFLOP/s", GPU: "G"}
	sw := &Sweep{Title: "Attention", Memory: true}
	mem := sw.MemoryFigure(p, []Result{ok, oom})
	if o := mem.Series[0].OutOfMemory; len(o) != 1 || o[0].Label != "would need 257.0 GiB" {
		t.Errorf("memory figure: out of memory at %+v, want a point labelled \"would need 257.0 GiB\"", o)
	}
	lines := sw.Figure(p, []Result{ok, oom}).(plots.Lines)
	if o := lines.Series[0].OutOfMemory; len(o) != 1 || o[0].Y != 0 || o[0].Label != "" {
		t.Errorf("throughput figure: out of memory at %+v, want a point with no value", o)
	}
}

// TestNearDeviceMemory: the device's memory is drawn on a memory figure
// where a size ran out of it or came within a tenth of it, not far above
// every point.
func TestNearDeviceMemory(t *testing.T) {
	const total = 80 << 30
	for _, tc := range []struct {
		desc string
		rs   []Result
		want bool
	}{
		{"a size out of memory", []Result{{PeakMem: 1 << 20}, {Outcome: OutOfMemory}}, true},
		{"a point holding 10 GiB", []Result{{PeakMem: 10 << 30}}, true},
		{"768 MiB at most", []Result{{PeakMem: 768 << 20}}, false},
	} {
		if got := nearDeviceMemory(tc.rs, total); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.desc, got, tc.want)
		}
	}
}
