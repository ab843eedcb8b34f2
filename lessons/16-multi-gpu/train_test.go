package multigpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// loss is the step's loss on the CPU: the squared error over every GPU's
// rows, halved, over the whole batch's rows, for the weights ws.
func loss(m mlp, ws [][]float64, xs, ts [][]float32) float64 {
	var sum float64
	n := len(xs)
	for g := range n {
		x := widen(xs[g])
		for l := 1; l <= m.Layers; l++ {
			z := matmul(x, ws[l], m.Batch, m.Hidden, m.Hidden, false, false)
			for j, v := range z {
				z[j] = max(v, 0)
			}
			x = z
		}
		for j, v := range x {
			d := v - float64(ts[g][j])
			sum += d * d / 2
		}
	}
	return sum / float64(m.Batch*n)
}

// TestCPUGradients: the CPU's gradients, which the GPUs' are checked
// against, match the loss's finite differences.
func TestCPUGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := mlp{Layers: 3, Hidden: 4, Batch: 3}
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.Float64()*2 - 1)
		}
		return v
	}
	ws := make([][]float32, m.Layers+1)
	for l := 1; l <= m.Layers; l++ {
		ws[l] = rnd(m.Hidden * m.Hidden)
	}
	xs := [][]float32{rnd(m.Batch * m.Hidden), rnd(m.Batch * m.Hidden)}
	ts := [][]float32{rnd(m.Batch * m.Hidden), rnd(m.Batch * m.Hidden)}
	dw := cpuGradients(m, ws, xs, ts)
	w64 := make([][]float64, len(ws))
	for l := 1; l <= m.Layers; l++ {
		w64[l] = widen(ws[l])
	}
	const h = 1e-6
	for l := 1; l <= m.Layers; l++ {
		for j := range w64[l] {
			w := w64[l][j]
			w64[l][j] = w + h
			up := loss(m, w64, xs, ts)
			w64[l][j] = w - h
			down := loss(m, w64, xs, ts)
			w64[l][j] = w
			fd := (up - down) / (2 * h)
			if math.Abs(fd-dw[l][j]) > 1e-5*math.Max(1, math.Abs(fd)) {
				t.Errorf("dW%d[%d] = %g, finite difference %g", l, j, dw[l][j], fd)
			}
		}
	}
}

// TestMatmul: the CPU product's transposes, on a 2×3 by 3×2 product.
func TestMatmul(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6}    // 2×3
	b := []float64{7, 8, 9, 10, 11, 12} // 3×2
	want := []float64{58, 64, 139, 154}
	at := []float64{1, 4, 2, 5, 3, 6}    // a stored 3×2
	bt := []float64{7, 9, 11, 8, 10, 12} // b stored 2×3
	for _, tt := range []struct {
		name   string
		a, b   []float64
		ta, tb bool
	}{{"a·b", a, b, false, false}, {"aᵀ stored", at, b, true, false}, {"bᵀ stored", a, bt, false, true}, {"both", at, bt, true, true}} {
		got := matmul(tt.a, tt.b, 2, 2, 3, tt.ta, tt.tb)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", tt.name, got, want)
				break
			}
		}
	}
}
