package fusecmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"cudarepl/fuse"
	"cudarepl/lessons"
	"cudarepl/nvrtc"
)

// TestRunWithoutGPU: without a GPU, fuse shows both ways and their bytes
// and compiles them; bad input is one clear error, before anything runs.
func TestRunWithoutGPU(t *testing.T) {
	for _, tc := range []struct {
		expr string
		n    int
		want string // error
	}{
		{"sigmoid(a +", Elements, `fuse: column 12 of "sigmoid(a +": the expression ends where a value is due`},
		{"2*3", Elements, "fuse 2*3: the expression reads no input"},
		{"a + b", 0, "fuse: 0 elements; give at least 1"},
	} {
		var out bytes.Buffer
		err := Run(lessons.Replay(errors.New("none"), lessons.View{Out: &out}), tc.expr, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "lessons:") {
			t.Errorf("Run(%q, %d) = %v, want %q", tc.expr, tc.n, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("Run(%q, %d) printed before refusing:\n%s", tc.expr, tc.n, out.String())
		}
	}
	// With NVRTC, fuse compiles and names its version; without it, fuse
	// says so and ends there, as no error (make test runs both ways).
	want := []string{
		`extern "C" __global__ void fused(`, `extern "C" __global__ void step2(`,
		"unfused  step1   +          x0 t0     t1                 12",
		"fused    fused   all        x0 x1 x2  out                16",
		"so fused can be at most 2.00× faster",
	}
	if v, err := nvrtc.Version(); err != nil {
		want = append(want, "Not compiled: "+strings.TrimPrefix(err.Error(), "gpu: ")+".\n", "not compiled, not run")
	} else {
		want = append(want, "registers/thread, 0 B spilled (NVRTC "+v+", sm_90)", "compiled, not run")
	}
	var out bytes.Buffer
	if err := Run(lessons.Replay(errors.New("none"), lessons.View{Out: &out}), "sigmoid(a + b*c)", Elements); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("fuse's output lacks %q:\n%s", w, out.String())
		}
	}
}

func TestBytesBound(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"sigmoid(a + b*c)", "fused moves 16 bytes an element, unfused 32, so fused can be at most 2.00× faster"},
		{"a/0", "one operation, so one kernel either way, moving 8 bytes an element: fusing saves nothing here"},
	} {
		x, err := fuse.Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		_, stages := x.Unfused("step")
		if got := bytesBound(x, stages); !strings.HasSuffix(got, tc.want) {
			t.Errorf("bytesBound(%q) = %q; want it to end %q", tc.expr, got, tc.want)
		}
	}
}

// TestReplayShowsRecorded: in replay, fuse shows the time a lesson
// recorded for the same kernel at the same size, labelled, and only that.
func TestReplayShowsRecorded(t *testing.T) {
	const results = `{"schema": "cudarepl-results/1", "results": [
 {"lesson": "fuse-recorded", "step": "Sweep", "kind": "bench", "variant": "fused here", "size": "n=67108864", "dims": [67108864], "dtype": "float32",
  "median_ms": 0.375968, "reps": 20, "rounds": [2855.9, 2877.0, 2666.5], "ceiling_rounds": [2917.5, 2888.4, 2893.6], "throughput": 2855.9, "unit": "GB/s",
  "ceiling": 2893.6, "ceiling_name": "device-to-device copy", "passed": true, "gpu": "NVIDIA H100 80GB HBM3", "driver": "580", "cuda": "13.0", "date": "2026-11-25", "mode": "live"}]}`
	lessons.Register(lessons.Def{Number: 90, Slug: "fuse-recorded", Files: fstest.MapFS{
		"lesson.md":         {Data: []byte("# Fused\n\nIntro.\n\n## Sweep\n\nProse.\n")},
		"results/h100.json": {Data: []byte(results)},
	}})
	Recorded("sigmoid(a + b*c)", "fuse-recorded", "fused here")
	for _, tc := range []struct {
		expr string
		n    int
		want string // "" for no recorded table
	}{
		{"sigmoid(a+b * c)", Elements, "fused  n=67108864      376.0  2856  0.98 (0.92–1.00)"},
		{"sigmoid(a + b*c)", 1 << 20, ""},
		{"a + b", Elements, ""},
	} {
		var out bytes.Buffer
		if err := Run(lessons.Replay(errors.New("none"), lessons.View{Out: &out}), tc.expr, tc.n); err != nil {
			t.Fatalf("Run(%q, %d): %v", tc.expr, tc.n, err)
		}
		got := out.String()
		label := `This kernel as lesson 90 (fuse-recorded) timed it, as "fused here": replayed from NVIDIA H100 80GB HBM3, 2026-11-25.`
		switch {
		case tc.want == "" && strings.Contains(got, "timed it"):
			t.Errorf("Run(%q, %d) shows a recording of another kernel or size:\n%s", tc.expr, tc.n, got)
		case tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, label)):
			t.Errorf("Run(%q, %d) lacks %q with %q:\n%s", tc.expr, tc.n, tc.want, label, got)
		}
	}
}
