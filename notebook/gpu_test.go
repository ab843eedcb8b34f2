//go:build gpu

package notebook

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// TestGPUFaultInACell: a learner's kernel that writes far out of bounds
// ends its cell with one clear message; the next cell runs as usual. Each
// Cell opens its own worker, as each GoNB cell is its own process.
func TestGPUFaultInACell(t *testing.T) {
	if w, err := gpu.Open(); errors.Is(err, gpu.ErrNoGPU) {
		t.Skipf("no GPU here: %v", err)
	} else if err == nil {
		w.Close()
	}
	const oob = `extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i + (1ull << 38)] = a[0];
}`
	var out bytes.Buffer
	err := (&Cell{Out: &out}).Check("vector-add", oob)
	if err == nil || !strings.Contains(err.Error(), "faulted: CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("Check(out-of-bounds kernel) = %v, want a fault named in one message", err)
	}
	t.Logf("the faulting cell ends with: error: %v", err)
	out.Reset()
	if err := (&Cell{Out: &out}).Step("vector-add", 4); err != nil {
		t.Fatalf("the next cell: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "15 of 15 checks ran (3 versions), and every one passed") {
		t.Errorf("the next cell's output:\n%s", out.String())
	}
}

// TestGPUTryAnEditedKernel: a learner's slower but correct version of a
// course kernel is checked and timed beside the course's; a wrong one is
// rejected by the checks.
func TestGPUTryAnEditedKernel(t *testing.T) {
	if w, err := gpu.Open(); errors.Is(err, gpu.ErrNoGPU) {
		t.Skipf("no GPU here: %v", err)
	} else if err == nil {
		w.Close()
	}
	l, _ := lessons.Find("vector-add")
	orig, _ := l.KernelSource("vadd_v1")
	slower := strings.Replace(orig, "if (i < n) c[i] = a[i] + b[i];", "if (i < n) { volatile float s = a[i]; for (int r = 0; r < 64; r++) s = s + 0.0f; c[i] = s + b[i]; }", 1)
	wrong := strings.Replace(orig, "if (i < n) c[i] = a[i] + b[i];", "if (i < n) c[i] = a[i] - b[i];", 1)
	var out bytes.Buffer
	if err := (&Cell{Out: &out}).Try("vector-add", "vadd_v1", slower, 256, "2^24"); err != nil {
		t.Fatalf("the slower edit: %v\n%s", err, out.String())
	}
	for _, want := range []string{"vadd_v1 passes every check vadd_v1 passes.", "vadd_v1 (yours)", "yours: ", "the course's vadd_v1: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the slower edit's output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("%s", out.String())
	out.Reset()
	err := (&Cell{Out: &out}).Try("vector-add", "vadd_v1", wrong, 256, "2^24")
	if err == nil || !strings.Contains(err.Error(), "check: c[") {
		t.Errorf("the wrong edit: %v, want it rejected by the check\n%s", err, out.String())
	}
}
