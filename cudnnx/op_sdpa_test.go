package cudnnx

import (
	"math"
	"slices"
	"testing"

	"cudarepl/gpu"
)

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
