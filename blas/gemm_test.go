package blas

import (
	"strings"
	"testing"

	"cudarepl/gpu"
)

// TestGEMMValidate: a product cuBLAS would refuse with a bare status is
// refused first, saying what is wrong.
func TestGEMMValidate(t *testing.T) {
	ok := GEMM{M: 4, N: 5, K: 6, A: 1, B: 2, C: 3, Type: gpu.FP32}
	if err := ok.validate(); err != nil {
		t.Fatalf("validate(%s) = %v", ok.Name(), err)
	}
	tests := []struct {
		desc string
		edit func(g *GEMM)
		want string
	}{
		{"zero size", func(g *GEMM) { g.K = 0 }, "sizes must be positive"},
		{"no memory", func(g *GEMM) { g.B = 0 }, "must all be device memory"},
		{"fp64 input", func(g *GEMM) { g.Type = gpu.FP64 }, "input type float64"},
		{"bool output", func(g *GEMM) { g.OutType = gpu.Bool }, "output type bool"},
		{"batch without strides", func(g *GEMM) { g.Batch = 3 }, "a batch of 3 needs positive strides"},
	}
	for _, tt := range tests {
		g := ok
		tt.edit(&g)
		if err := g.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: validate = %v, want an error with %q", tt.desc, err, tt.want)
		}
	}
}

// TestGEMMName: the name messages and timelines show, and the defaults of
// the compute and output types.
func TestGEMMName(t *testing.T) {
	g := GEMM{M: 4, N: 5, K: 6, Type: gpu.FP16}
	if got, want := g.Name(), "gemm 4x5x6 float16"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if g.compute() != Compute32F || g.outType() != gpu.FP16 {
		t.Errorf("defaults: compute %s, out %s; want fp32 and float16", g.compute(), g.outType())
	}
}
