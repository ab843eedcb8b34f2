package cudnnx

import (
	"math"
	"slices"
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

// TestEvalLayoutsAgree: the CPU reference gives the same convolution for
// NCHW and NHWC storage of the same numbers.
func TestEvalLayoutsAgree(t *testing.T) {
	const n, c, h, w, k = 2, 3, 5, 4, 4
	run := func(layout func(n, c, h, w int) Shape) []float64 {
		g := New("conv")
		xs, ws := layout(n, c, h, w), layout(k, c, 3, 3)
		x := g.Tensor("x", gpu.FP32, xs)
		wt := g.Tensor("w", gpu.FP32, ws)
		y := g.Relu(g.Conv(x, wt, Same(3))).Output(gpu.FP32)
		xv, wv := make([]float64, xs.Span()), make([]float64, ws.Span())
		fill := func(v []float64, s Shape) {
			s.each(func(idx []int64, off int64) {
				var f float64
				for i, d := range idx {
					f = f*7 + float64(d) + float64(i)
				}
				v[off] = math.Sin(f)
			})
		}
		fill(xv, xs)
		fill(wv, ws)
		out, err := g.Eval(map[*Tensor][]float64{x: xv, wt: wv})
		if err != nil {
			t.Fatal(err)
		}
		// Return in logical (NCHW) order.
		var logical []float64
		y.Shape().each(func(_ []int64, off int64) { logical = append(logical, out[y][off]) })
		return logical
	}
	a, b := run(NCHW), run(NHWC)
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			t.Fatalf("element %d: NCHW %g, NHWC %g", i, a[i], b[i])
		}
	}
	var nonzero int
	for _, v := range a {
		if v > 0 {
			nonzero++
		}
	}
	if nonzero == 0 || nonzero == len(a) {
		t.Errorf("%d of %d outputs positive: the ReLU is not being exercised", nonzero, len(a))
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

func TestPointwiseReference(t *testing.T) {
	for mode := range pointwiseModes {
		if mode == "gen_index" || mode == "binary_select" {
			continue // Eval works them out itself: they need the index, or a third input
		}
		if v := pointwiseValue(mode, 0.5, 2); math.IsNaN(v) {
			t.Errorf("pointwise(%s) has no reference", mode)
		}
	}
}

// TestEvalCausalSDPA: with every score equal, query i averages the rows of
// v for keys 0…i only; the graph reads k transposed, and keeps its
// statistics virtual.
func TestEvalCausalSDPA(t *testing.T) {
	const s, d = 3, 2
	g := New("causal sdpa")
	q, k, v := g.Tensor("q", gpu.FP16, BHSD(1, 1, s, d)), g.Tensor("k", gpu.FP16, BHSD(1, 1, s, d)), g.Tensor("v", gpu.FP16, BHSD(1, 1, s, d))
	o := g.CausalSDPA(q, k, v, 0.5)
	if got := k.Shape().Dims; !slices.Equal(got, []int64{1, 1, d, s}) {
		t.Errorf("k is recorded as %v, want it transposed, 1×1×%d×%d", got, d, s)
	}
	vals, err := g.Eval(map[*Tensor][]float64{q: make([]float64, s*d), k: {1, 1, 1, 1, 1, 1}, v: {1, 2, 3, 4, 5, 6}})
	if err != nil {
		t.Fatal(err)
	}
	// Row i: the mean of v's rows 0…i.
	if want := []float64{1, 2, 2, 3, 3, 4}; !equal(vals[o], want) {
		t.Errorf("o = %v, want %v", vals[o], want)
	}
	if o.Virtual() || o.t.Type != gpu.FP16 {
		t.Errorf("o is virtual %v, %s; want float16 in device memory", o.Virtual(), o.t.Type)
	}
	spec, err := g.spec()
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]int{}
	for _, n := range spec.Nodes {
		modes[n.Op.String()]++
	}
	for m, want := range map[string]int{"matmul": 2, "pointwise gen_index": 2, "pointwise cmp_ge": 1, "pointwise binary_select": 1, "reduction max": 1, "reduction add": 1} {
		if modes[m] != want {
			t.Errorf("%d %s nodes, want %d (%v)", modes[m], m, want, modes)
		}
	}
}

// TestEvalMatmulRank4 multiplies a batch of 2×2 heads of matrices, one side
// broadcast over the heads.
func TestEvalMatmulRank4(t *testing.T) {
	g := New("matmul rank 4")
	a := g.Tensor("a", gpu.FP32, Shape{[]int64{2, 2, 1, 2}, []int64{4, 2, 2, 1}})
	b := g.Tensor("b", gpu.FP32, Shape{[]int64{2, 1, 2, 1}, []int64{2, 2, 1, 1}})
	y := g.Matmul(a, b).Output(gpu.FP32)
	if got := y.Shape().Dims; !slices.Equal(got, []int64{2, 2, 1, 1}) {
		t.Fatalf("y is %v, want 2×2×1×1", got)
	}
	vals, err := g.Eval(map[*Tensor][]float64{a: {1, 2, 3, 4, 5, 6, 7, 8}, b: {1, 1, 2, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{3, 7, 10, 14}; !equal(vals[y], want) {
		t.Errorf("y = %v, want %v", vals[y], want)
	}
}

// TestEvalSDPA: with every score equal, attention averages v over the
// keys; with one key's score far above the rest, it picks that key's row.
func TestEvalSDPA(t *testing.T) {
	const s, d = 3, 2
	g := New("sdpa")
	q, k, v := g.Tensor("q", gpu.FP32, BHSD(1, 1, s, d)), g.Tensor("k", gpu.FP32, BHSD(1, 1, s, d)), g.Tensor("v", gpu.FP32, BHSD(1, 1, s, d))
	o := g.SDPA(q, k, v, 0.5)
	vs := []float64{1, 2, 3, 4, 5, 6}
	for _, tc := range []struct {
		name       string
		q, k, want []float64 // want: every row of o
	}{
		{"equal scores: the mean of v", []float64{0, 0, 0, 0, 0, 0}, []float64{1, 1, 1, 1, 1, 1}, []float64{3, 4}},
		{"one key far ahead: its row of v", []float64{100, 0, 100, 0, 100, 0}, []float64{0, 0, 0, 0, 1, 0}, []float64{5, 6}},
	} {
		vals, err := g.Eval(map[*Tensor][]float64{q: tc.q, k: tc.k, v: vs})
		if err != nil {
			t.Fatal(err)
		}
		for i := range s {
			for c := range d {
				if got := vals[o][i*d+c]; math.Abs(got-tc.want[c]) > 1e-9 {
					t.Errorf("%s: o[%d][%d] = %g, want %g", tc.name, i, c, got, tc.want[c])
				}
			}
		}
	}
}
