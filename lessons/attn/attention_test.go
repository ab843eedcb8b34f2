package attn

import (
	"math"
	"strings"
	"testing"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/numeric"
)

// TestReference: the reference agrees with cudnnx's float64 attention
// (non-causal), gives the large heads' queries the mean of the values they
// may see, and stays finite on them.
func TestReference(t *testing.T) {
	for _, causal := range []bool{false, true} {
		a := Shape{B: 1, H: 4, S: 37, D: 16, Causal: causal}
		d := NewData(a, 7)
		want := d.reference()
		if len(d.rows) != a.Heads()*a.S {
			t.Fatalf("%d rows compared, want all %d", len(d.rows), a.Heads()*a.S)
		}
		for r, row := range d.rows {
			h, i := row/a.S, row%a.S
			if h%kinds != headHigh && h%kinds != headLow {
				continue
			}
			keys := a.S
			if causal {
				keys = i + 1
			}
			for c := range a.D {
				mean := 0.0
				for j := range keys {
					mean += float64(gpu.Float16From(d.V[(h*a.S+j)*a.D+c]))
				}
				mean /= float64(keys)
				if got := want[r*a.D+c]; math.Abs(got-mean) > 1e-9 || math.IsNaN(got) {
					t.Fatalf("causal %v: head %d (kind %d) row %d: o[%d] = %v, want the mean of v, %v", causal, h, h%kinds, i, c, got, mean)
				}
			}
		}
		if causal {
			continue
		}
		g := cudnnx.New("sdpa")
		sh := cudnnx.BHSD(a.B, a.H, a.S, a.D)
		q, k, v := g.Tensor("q", gpu.FP32, sh), g.Tensor("k", gpu.FP32, sh), g.Tensor("v", gpu.FP32, sh)
		o := g.SDPA(q, k, v, a.Scale())
		f64 := func(h []uint16) []float64 {
			out := make([]float64, len(h))
			for i, x := range h {
				out[i] = float64(gpu.Float16From(x))
			}
			return out
		}
		vals, err := g.Eval(map[*cudnnx.Tensor][]float64{q: f64(d.Q), k: f64(d.K), v: f64(d.V)})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range vals[o] {
			if math.Abs(w-want[i]) > 1e-9 {
				t.Fatalf("o[%d] = %v, cudnnx's Eval gives %v", i, want[i], w)
			}
		}
	}
}

// TestCheck: the reference passes; a NaN anywhere, a row scaled by 2%
// and a large shape's sampled rows are each caught.
func TestCheck(t *testing.T) {
	a := Shape{B: 1, H: 4, S: 50, D: 8}
	d := NewData(a, 3)
	ref := d.reference()
	good := make([]float32, a.Elems())
	for i, w := range ref {
		good[i] = float32(w)
	}
	for _, tc := range []struct {
		name string
		edit func(o []float32)
		want string
	}{
		{"exact", func([]float32) {}, ""},
		{"a NaN", func(o []float32) { o[123] = float32(math.NaN()) }, "not finite"},
		{"a row 2% high", func(o []float32) {
			for c := range a.D {
				o[60*a.D+c] = 1.02*o[60*a.D+c] + 0.02
			}
		}, "check: O[0,1,10,"},
	} {
		o := append([]float32{}, good...)
		tc.edit(o)
		_, err := d.Check(o, numeric.TolHalf)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
	big := NewData(Shape{B: 1, H: 8, S: 4096, D: 64}, 1)
	if n := len(big.rows); n == 0 || n > 8*64 {
		t.Errorf("S = 4096: %d rows compared, want a sample of at most 512", n)
	}
}
