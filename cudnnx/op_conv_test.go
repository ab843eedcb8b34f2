package cudnnx

import (
	"math"
	"testing"

	"cudarepl/gpu"
)

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
