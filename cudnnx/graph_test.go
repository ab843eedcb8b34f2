package cudnnx

import (
	"strings"
	"testing"

	"cudarepl/gpu"
)

func TestBuilderErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(g *Graph)
		want  string
	}{
		{"channels", func(g *Graph) {
			x := g.Tensor("x", gpu.FP16, NHWC(1, 8, 5, 5))
			w := g.Tensor("w", gpu.FP16, NHWC(4, 6, 3, 3))
			g.Conv(x, w, Same(3)).Output(gpu.FP16)
		}, "same C"},
		{"mode", func(g *Graph) {
			x := g.Tensor("x", gpu.FP32, NCHW(1, 1, 2, 2))
			g.Pointwise("squish", x).Output(gpu.FP32)
		}, `no pointwise mode "squish"`},
		{"arity", func(g *Graph) {
			x := g.Tensor("x", gpu.FP32, NCHW(1, 1, 2, 2))
			g.Pointwise("add", x).Output(gpu.FP32)
		}, "takes 2 inputs, not 1"},
		{"broadcast", func(g *Graph) {
			x := g.Tensor("x", gpu.FP32, NCHW(1, 4, 2, 2))
			b := g.Tensor("b", gpu.FP32, NCHW(1, 3, 1, 1))
			g.Add(x, b).Output(gpu.FP32)
		}, "does not broadcast"},
		{"filter too big", func(g *Graph) {
			x := g.Tensor("x", gpu.FP32, NCHW(1, 1, 2, 2))
			w := g.Tensor("w", gpu.FP32, NCHW(1, 1, 5, 5))
			g.Conv(x, w, Conv2D{Stride: 1, Dilation: 1}).Output(gpu.FP32)
		}, "does not fit"},
		{"other graph", func(g *Graph) {
			x := New("other").Tensor("x", gpu.FP32, NCHW(1, 1, 2, 2))
			g.Relu(x).Output(gpu.FP32)
		}, "another graph"},
		{"no output", func(g *Graph) {
			g.Relu(g.Tensor("x", gpu.FP32, NCHW(1, 1, 2, 2)))
		}, "no output"},
		{"no ops", func(g *Graph) {}, "no operations"},
		{"matmul", func(g *Graph) {
			g.Matmul(g.Tensor("a", gpu.FP16, Rows(1, 4, 8)), g.Tensor("b", gpu.FP16, Rows(1, 7, 4))).Output(gpu.FP32)
		}, "want …×M×K and …×K×N"},
		{"reduce", func(g *Graph) {
			g.Reduce("add", g.Tensor("a", gpu.FP32, Rows(1, 4, 8)), []int64{1, 2, 1}).Output(gpu.FP32)
		}, "must be 1 (reduced) or 4"},
		{"sdpa", func(g *Graph) {
			q, k := g.Tensor("q", gpu.FP16, BHSD(1, 2, 8, 64)), g.Tensor("k", gpu.FP16, BHSD(1, 2, 8, 32))
			g.SDPA(q, k, k, 0.125)
		}, "want B×H×S×D each"},
	} {
		g := New(tc.name)
		tc.build(g)
		if _, err := g.spec(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Spec() = %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestSpecAndBindings(t *testing.T) {
	g := New("conv+bias+relu")
	x := g.Tensor("x", gpu.FP16, NHWC(2, 8, 6, 6))
	w := g.Tensor("w", gpu.FP16, NHWC(16, 8, 3, 3))
	b := g.Tensor("b", gpu.FP16, NHWC(1, 16, 1, 1))
	conv := g.Conv(x, w, Same(3))
	y := g.Relu(g.Add(conv, b)).Output(gpu.FP16)
	spec, err := g.spec()
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Nodes) != 3 || len(spec.Tensors) != 6 {
		t.Errorf("spec has %d nodes and %d tensors, want 3 and 6", len(spec.Nodes), len(spec.Tensors))
	}
	if !conv.Virtual() || y.Virtual() {
		t.Errorf("conv virtual = %v, y virtual = %v; want true, false", conv.Virtual(), y.Virtual())
	}
	if got := y.Shape(); got.Dims[1] != 16 || got.Strides[1] != 1 {
		t.Errorf("y shape = %+v, want 16 channels innermost (NHWC like x)", got)
	}
	seen := map[int64]bool{}
	for _, tt := range spec.Tensors {
		if seen[tt.UID] {
			t.Errorf("uid %d twice", tt.UID)
		}
		seen[tt.UID] = true
	}
	if _, err := g.Op(Bind{x: 1 << 20, w: 2 << 20}, Options{}); err == nil || !strings.Contains(err.Error(), "no memory bound for b, relu") {
		t.Errorf("Op(missing bindings) = %v, want a no-memory error naming b and the output", err)
	}
	if _, err := g.Op(Bind{x: 1 << 20, w: 2 << 20, b: 3 << 20, y: 4 << 20, conv: 5 << 20}, Options{}); err == nil || !strings.Contains(err.Error(), "virtual") {
		t.Errorf("Op(binding a virtual tensor) = %v, want an error", err)
	}
	op, err := g.Op(Bind{x: 1 << 20, w: 2 << 20, b: 3 << 20, y: 4 << 20}, Options{Autotune: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(op.Name(), "autotuned") {
		t.Errorf("Op().Name() = %q, want it to say the plan is autotuned", op.Name())
	}
	if _, ok := op.(execOp); !ok {
		t.Errorf("Op = %#v, want the graph's execution op", op)
	}
}

func TestEvalReduceAndMatmul(t *testing.T) {
	g := New("matmul+sum")
	a := g.Tensor("a", gpu.FP32, Rows(1, 2, 3))
	b := g.Tensor("b", gpu.FP32, Rows(1, 3, 2))
	m := g.Matmul(a, b).Output(gpu.FP32)
	s := g.Reduce("add", m, []int64{1, 2, 1}).Output(gpu.FP32)
	out, err := g.Eval(map[*Tensor][]float64{a: {1, 2, 3, 4, 5, 6}, b: {1, 0, 0, 1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out[m], []float64{4, 5, 10, 11}; !equal(got, want) {
		t.Errorf("matmul = %v, want %v", got, want)
	}
	if got, want := out[s], []float64{9, 21}; !equal(got, want) {
		t.Errorf("row sums = %v, want %v", got, want)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
