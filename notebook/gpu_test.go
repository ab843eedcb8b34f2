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
	if !strings.Contains(out.String(), "20 of 20 checks ran (4 versions), and every one passed") {
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

// TestGPUEditedSteps: a step that launches a kernel runs the learner's
// version, and the step's own check judges it; a kernel launched beside a
// library is checked and timed as the version that launches it.
func TestGPUEditedSteps(t *testing.T) {
	if w, err := gpu.Open(); errors.Is(err, gpu.ErrNoGPU) {
		t.Skipf("no GPU here: %v", err)
	} else if err == nil {
		w.Close()
	}
	src := func(slug, name string) string {
		l, _ := lessons.Find(slug)
		s, err := l.KernelSource(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	edit := func(s, old, new string) string {
		out := strings.Replace(s, old, new, 1)
		if out == s {
			t.Fatalf("the kernel changed: %q no longer appears in it", old)
		}
		return out
	}
	where, unguarded, biasRelu := src("hello-gpu", "where_am_i"), src("vector-add", "vadd_unguarded"), src("cudnn-fusion", "bias_relu_nhwc")
	scalar := edit(biasRelu, biasRelu[strings.Index(biasRelu, "    for"):strings.LastIndex(biasRelu, "}")],
		"    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n"+
			"        y[i] = f2h(fmaxf(h2f(y[i]) + h2f(b[i % K]), 0.0f));\n")
	tests := []struct {
		desc    string
		run     func(c *Cell) error
		want    []string // in the output
		wantErr string
	}{
		{"where_am_i, as written", func(c *Cell) error { return c.StepWith("hello-gpu", 2, "where_am_i", where, 128, "2048") },
			[]string{"block→SM: 0→", "every one of 2048 threads"}, ""},
		{"where_am_i, 300 blocks of 64", func(c *Cell) error { return c.StepWith("hello-gpu", 2, "where_am_i", where, 64, "19200") },
			[]string{"… and 268 blocks more", "300 blocks ran on"}, ""},
		{"where_am_i writing the wrong thread index", func(c *Cell) error {
			return c.StepWith("hello-gpu", 2, "where_am_i", edit(where, "thread[i] = threadIdx.x;", "thread[i] = threadIdx.x + 1;"), 128, "2048")
		}, []string{"Running your where_am_i"}, "check: thread["},
		{"vadd_unguarded, as written", func(c *Cell) error {
			return c.StepWith("vector-add", 3, "vadd_unguarded", unguarded, 256, "1000")
		}, []string{"The check caught it", "24 of them spare"}, ""},
		{"vadd_unguarded at a multiple of the block", func(c *Cell) error {
			return c.StepWith("vector-add", 3, "vadd_unguarded", unguarded, 256, "1024")
		}, []string{"no spare threads"}, ""},
		{"vadd_unguarded with its guard back", func(c *Cell) error {
			return c.StepWith("vector-add", 3, "vadd_unguarded", edit(unguarded, "c[i] = a[i] + b[i];", "if (i < n) c[i] = a[i] + b[i];"), 256, "1000")
		}, []string{"nothing landed past the end of c"}, ""},
		{"bias_relu_nhwc one element at a time", func(c *Cell) error {
			return c.Try("cudnn-fusion", "bias_relu_nhwc", scalar, 0, "8x64x112x112x64")
		}, []string{"bias_relu_nhwc (yours) passes", "unfused: conv, bias+ReLU (yours)", "with yours", "with the course's bias_relu_nhwc"}, ""},
		{"bias_relu_nhwc without the ReLU", func(c *Cell) error {
			return c.Try("cudnn-fusion", "bias_relu_nhwc", edit(biasRelu, "fmaxf(h2f(h[j]) + h2f(b[c + j]), 0.0f)", "h2f(h[j]) + h2f(b[c + j])"), 0, "8x64x112x112x64")
		}, []string{"FAILED"}, "bias_relu_nhwc (yours)"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := tt.run(&Cell{Out: &out})
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %v, want %q\n%s", tt.desc, err, tt.wantErr, out.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.desc, w, out.String())
			}
		}
		t.Logf("%s:\n%s", tt.desc, out.String())
	}
}
