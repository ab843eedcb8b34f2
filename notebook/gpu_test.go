//go:build gpu

package notebook

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"cudarepl/gpu"
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
	if !strings.Contains(out.String(), "vadd_v3  n=1048583") {
		t.Errorf("the next cell's output:\n%s", out.String())
	}
}
