package numeric

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		desc    string
		got     []float32
		want    []float64
		dims    []int
		wantErr string
	}{
		{"equal", []float32{1, 2, 3}, []float64{1, 2, 3}, []int{3}, ""},
		{"within tolerance", []float32{1.000001}, []float64{1}, []int{1}, ""},
		{"one off, 1-D", []float32{1, 2.5, 3}, []float64{1, 2, 3}, []int{3}, "check: c[1] = 2.5, want 2 (|diff| 0.5 > tol 1e-05); 1 of 3 differ"},
		{"2-D index", []float32{0, 0, 0, 0, 0, 12.5}, []float64{0, 0, 0, 0, 0, 12}, []int{2, 3}, "check: c[1,2] = 12.5, want 12"},
		{"unwritten (NaN)", []float32{1, nan, nan}, []float64{1, 2, 3}, []int{3}, "check: c[1] = NaN, want 2 (not finite: never written, or overflowed); 2 of 3 differ"},
		{"length", []float32{1}, []float64{1, 2}, []int{2}, "check: c has 1 elements, want 2"},
	}
	for _, tt := range tests {
		_, err := Compare("c", tt.got, tt.want, tt.dims, TolFP32)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: Compare = %v, want nil", tt.desc, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("%s: Compare = %v\nwant prefix %q", tt.desc, err, tt.wantErr)
		}
	}
}

func TestCompareMove(t *testing.T) {
	nan := float32(math.NaN())
	src := []float32{10, 11, 12, 13, 14, 15}
	transposed := func(i int) int { return i%2*3 + i/2 } // a 2×3 matrix read as its 3×2 transpose
	tests := []struct {
		desc    string
		got     []float32
		wantErr string
	}{
		{"moved", []float32{10, 13, 11, 14, 12, 15}, ""},
		{"one wrong", []float32{10, 13, 11, 14, 15, 12}, "check: out[2,0] = 15, want 12 (|diff| 3 > tol 0); 2 of 6 differ"},
		{"unwritten (NaN)", []float32{10, 13, nan, 14, 12, 15}, "check: out[1,0] = NaN, want 11 (not finite"},
		{"negative zero", []float32{10, 13, 11, 14, 12, float32(math.Copysign(0, -1))}, "check: out[2,1] = -0, want 15"},
	}
	for _, tt := range tests {
		_, err := CompareMove("out", tt.got, src, transposed, []int{3, 2})
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: CompareMove = %v, want nil", tt.desc, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("%s: CompareMove = %v\nwant prefix %q", tt.desc, err, tt.wantErr)
		}
	}
}

func TestCompareNorm(t *testing.T) {
	want := []float64{1, 2, 3, 4}
	if st, err := CompareNorm("C", []float32{1.001, 2, 3, 4}, want, nil, 1e-3); err != nil || st.MaxRelErr > 1e-3 {
		t.Errorf("small error: %v (%g)", err, st.MaxRelErr)
	}
	if _, err := CompareNorm("C", []float32{2, 2, 3, 4}, want, nil, 1e-3); err == nil || !strings.Contains(err.Error(), "‖out − ref‖/‖ref‖") {
		t.Errorf("large error: %v", err)
	}
	if _, err := CompareNorm("C", []float32{1, float32(math.NaN()), 3, 4}, want, []int{2, 2}, 1e-2); err == nil || !strings.Contains(err.Error(), "C[0,1] = NaN") {
		t.Errorf("NaN: %v", err)
	}
}

func TestUnflatten(t *testing.T) {
	for _, tt := range []struct {
		i    int
		dims []int
		want string
	}{{5, []int{6}, "[5]"}, {5, []int{2, 3}, "[1 2]"}, {23, []int{2, 3, 4}, "[1 2 3]"}} {
		if got := fmt.Sprint(unflatten(tt.i, tt.dims)); got != tt.want {
			t.Errorf("unflatten(%d, %v) = %s, want %s", tt.i, tt.dims, got, tt.want)
		}
	}
}

// TestPastTheEnd: the guard behind c catches a write past n, and names the
// first element written.
func TestPastTheEnd(t *testing.T) {
	guard := make([]float32, 8)
	for i := range guard {
		guard[i] = math.Float32frombits(Poison32)
	}
	if err := PastTheEnd("c", guard, 1000); err != nil {
		t.Errorf("untouched guard: %v", err)
	}
	guard[2], guard[3] = 1, 2
	var pe *PastTheEndError
	if err := PastTheEnd("c", guard, 1000); !errors.As(err, &pe) || pe.First != 1002 || pe.Count != 2 ||
		!strings.Contains(err.Error(), "c[1002] was written, past the end of c (n = 1000)") {
		t.Errorf("written guard: %v", err)
	}
}

func TestTolFP32Sum(t *testing.T) {
	for _, tc := range []struct {
		k    int
		want float64
	}{{1, TolFP32Reduction}, {2048, TolFP32Reduction}, {8192, 2 * TolFP32Reduction}} {
		if got := TolFP32Sum(tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("TolFP32Sum(%d) = %g, want %g", tc.k, got, tc.want)
		}
	}
}
