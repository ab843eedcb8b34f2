package fusecmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"

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
		{"2*3", Elements, "the expression reads no input"},
		{"a + b", 0, "0 elements; give at least 1"},
	} {
		var out bytes.Buffer
		err := Run(lessons.Replay(errors.New("none"), lessons.View{Out: &out}), tc.expr, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%q, %d) = %v, want %q", tc.expr, tc.n, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("Run(%q, %d) printed before refusing:\n%s", tc.expr, tc.n, out.String())
		}
	}
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("the rest needs NVRTC (Debian: libnvrtc11.2 from non-free): %v", err)
	}
	var out bytes.Buffer
	if err := Run(lessons.Replay(errors.New("none"), lessons.View{Out: &out}), "sigmoid(a + b*c)", Elements); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`extern "C" __global__ void fused(`, `extern "C" __global__ void step2(`,
		"unfused  step1   +          x0 t0     t1                 12",
		"fused    fused   all        x0 x1 x2  out                16",
		"so fused can be at most 2.00× faster", "registers/thread", "compiled, not run",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("fuse's output lacks %q:\n%s", want, out.String())
		}
	}
}
