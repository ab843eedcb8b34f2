package conv

import (
	"math"
	"testing"

	"cudarepl/gpu"
)

func TestConvLayoutRoundTrip(t *testing.T) {
	const n, c, h, w = 2, 3, 4, 5
	v := make([]float64, n*c*h*w)
	for i := range v {
		v[i] = float64(i)
	}
	m := Layout(v, n, c, h, w, true)
	if m[1] != float64(h*w) { // NHWC: the second element is channel 1 of pixel 0
		t.Errorf("Layout: element 1 = %v, want %v", m[1], h*w)
	}
	back := Logical(m, n, c, h, w, true)
	for i := range v {
		if back[i] != v[i] {
			t.Fatalf("Logical(Layout(v))[%d] = %v, want %v", i, back[i], v[i])
		}
	}
	if got := Layout(v, n, c, h, w, false); &got[0] != &v[0] {
		t.Error("Layout(NCHW) copied; it should return v as it is")
	}
}

// TestBiasesAlternateInSign: half the biases are negative, 0.1 to 0.5 in
// size, so that a ReLU applied before the bias shows in a check.
func TestBiasesAlternateInSign(t *testing.T) {
	for _, dt := range []gpu.DType{gpu.FP16, gpu.FP32} {
		d := NewData(Shape{1, 1, 1, 1, 24}, dt)
		for k, b := range d.Bias {
			if neg := k%2 == 0; (b < 0) != neg || math.Abs(b) < 0.0999 || math.Abs(b) > 0.5001 {
				t.Errorf("%s: bias[%d] = %v, want %s, 0.1 to 0.5 in size", dt, k, b, map[bool]string{true: "negative", false: "positive"}[neg])
			}
		}
	}
}
