package blas

import (
	"bytes"
	"encoding/gob"
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
		{"fast accumulation on fp32", func(g *GEMM) { g.FastAccum = true }, "FastAccum applies only to FP8 products (Type float8 e4m3), not to float32 inputs"},
		{"fast accumulation on fp16", func(g *GEMM) { g.Type, g.FastAccum = gpu.FP16, true }, "not to float16 inputs"},
		{"fast accumulation on bf16, tuned", func(g *GEMM) { g.Type, g.Tuned, g.FastAccum = gpu.BF16, true, true }, "not to bfloat16 inputs"},
	}
	for _, tt := range tests {
		g := ok
		tt.edit(&g)
		if err := g.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: validate = %v, want an error with %q", tt.desc, err, tt.want)
		}
	}
}

// TestFastAccumRefusedBeforeTheGPU: Prepare refuses fast accumulation on
// a product that is not FP8, cuBLAS's or a tuned cuBLASLt one, before it
// touches a context (it is given none here).
func TestFastAccumRefusedBeforeTheGPU(t *testing.T) {
	for _, tuned := range []bool{false, true} {
		g := GEMM{M: 16, N: 16, K: 16, A: 1, B: 2, C: 3, Type: gpu.FP16, Alpha: 1, Tuned: tuned, FastAccum: true}
		if _, err := g.Prepare(nil); err == nil || !strings.Contains(err.Error(), "FastAccum applies only to FP8 products") {
			t.Errorf("Prepare(%s, tuned %v) = %v, want FastAccum refused", g.Name(), tuned, err)
		}
	}
}

// TestGEMMName: the name messages and timelines show, and the defaults of
// the compute and output types.
func TestGEMMName(t *testing.T) {
	tests := []struct {
		g    GEMM
		want string
	}{
		{GEMM{M: 4, N: 5, K: 6, Type: gpu.FP16}, "gemm 4x5x6 float16"},
		{GEMM{M: 16, N: 32, K: 48, Type: gpu.FP8E4M3}, "gemm 16x32x48 float8 e4m3"},
		{GEMM{M: 16, N: 32, K: 48, Type: gpu.FP8E4M3, FastAccum: true}, "gemm 16x32x48 float8 e4m3, fast accumulation"},
	}
	for _, tt := range tests {
		if got := tt.g.Name(); got != tt.want {
			t.Errorf("Name = %q, want %q", got, tt.want)
		}
	}
	g := tests[0].g
	if g.compute() != Compute32F || g.outType() != gpu.FP16 {
		t.Errorf("defaults: compute %s, out %s; want fp32 and float16", g.compute(), g.outType())
	}
}

// TestFastAccumKeys: the two FP8 products, with fast accumulation and
// without, never share a name or a tuning.
func TestFastAccumKeys(t *testing.T) {
	slow := GEMM{M: 64, N: 64, K: 64, Type: gpu.FP8E4M3, OutType: gpu.BF16, TransB: true}
	fast := slow
	fast.FastAccum = true
	if slow.Name() == fast.Name() {
		t.Errorf("both named %q", slow.Name())
	}
	if slow.tunedKey() == fast.tunedKey() {
		t.Errorf("both tuned under %q", slow.tunedKey())
	}
}

// TestGEMMCrossesToTheWorker: a GEMM inside an op list, as a Bench sends
// it to the worker, comes back with every field, FastAccum included.
func TestGEMMCrossesToTheWorker(t *testing.T) {
	want := GEMM{M: 64, N: 48, K: 32, A: 1, B: 2, C: 3, TransB: true, Alpha: 1, Type: gpu.FP8E4M3, OutType: gpu.BF16, FastAccum: true}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(gpu.Bench{Name: "x", Ops: [][]gpu.Op{{want}}}); err != nil {
		t.Fatal(err)
	}
	var got gpu.Bench
	if err := gob.NewDecoder(&buf).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Ops) != 1 || len(got.Ops[0]) != 1 {
		t.Fatalf("decoded ops %v, want one", got.Ops)
	}
	if g, ok := got.Ops[0][0].(GEMM); !ok || g != want {
		t.Errorf("decoded %#v, want %#v", got.Ops[0][0], want)
	}
}
