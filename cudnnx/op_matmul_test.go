package cudnnx

import (
	"slices"
	"testing"

	"cudarepl/gpu"
)

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
