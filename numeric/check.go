package numeric

import (
	"fmt"
	"math"
	"strings"
)

// Tolerances by the precision of the arithmetic, relative to the reference
// (which is computed in float64).
const (
	TolFP32          = 1e-5 // float32, elementwise: a few ulps
	TolFP32Reduction = 1e-4 // float32 sums over long reductions; see TolFP32Sum
	TolTF32          = 1e-3
	TolHalf          = 1e-2 // fp16 and bf16
)

// The 32-bit words an output is filled with before a kernel runs, so that
// an element never written fails its check.
const (
	// Poison32 is a float32 NaN no kernel computes by accident.
	Poison32 uint32 = 0x7fc0dead
	// Poison16 is a pair of 16-bit NaNs, which reads as NaN in fp16 and
	// in bf16 alike.
	Poison16 uint32 = 0x7fc17fc1
)

// CheckError is a failed check: the first wrong element, its value, the
// expected value, the tolerance, and how many elements differ.
type CheckError struct {
	Name       string // the output, e.g. "c" or "C"
	Index      []int  // of the first mismatch
	Got, Want  float64
	Tol        float64
	Bad, Total int
}

func (e *CheckError) Error() string {
	idx := make([]string, len(e.Index))
	for i, v := range e.Index {
		idx[i] = fmt.Sprint(v)
	}
	if math.IsNaN(e.Got) || math.IsInf(e.Got, 0) {
		return fmt.Sprintf("check: %s[%s] = %v, want %.7g (not finite: never written, or overflowed); %d of %d differ",
			e.Name, strings.Join(idx, ","), e.Got, e.Want, e.Bad, e.Total)
	}
	return fmt.Sprintf("check: %s[%s] = %.7g, want %.7g (|diff| %.3g > tol %.3g); %d of %d differ",
		e.Name, strings.Join(idx, ","), e.Got, e.Want, math.Abs(e.Got-e.Want), e.Tol, e.Bad, e.Total)
}

// CheckStats sums up a check that ran: the worst relative error seen.
type CheckStats struct {
	MaxRelErr float64
	Tol       float64
	N         int
}

// Compare checks every element of got against want (the float64 reference):
// |got − want| ≤ tol·(|want| + 1), so that the tolerance is relative for
// large values and absolute near zero. NaN, which outputs are poisoned
// with, always fails, so an element never written is caught. dims shapes
// the index in the error message: {n} gives c[i], {rows, cols} gives C[r,c].
func Compare(name string, got []float32, want []float64, dims []int, tol float64) (CheckStats, error) {
	st := CheckStats{Tol: tol, N: len(want)}
	if len(got) != len(want) {
		return st, fmt.Errorf("check: %s has %d elements, want %d", name, len(got), len(want))
	}
	var first *CheckError
	bad := 0
	for i := range want {
		g := float64(got[i])
		rel := math.Abs(g-want[i]) / (math.Abs(want[i]) + 1)
		if rel <= tol {
			st.MaxRelErr = math.Max(st.MaxRelErr, rel)
			continue
		}
		bad++
		if first == nil {
			first = &CheckError{Name: name, Index: unflatten(i, dims), Got: g, Want: want[i], Tol: tol}
		}
		if !math.IsNaN(rel) {
			st.MaxRelErr = math.Max(st.MaxRelErr, rel)
		} else {
			st.MaxRelErr = math.Inf(1)
		}
	}
	if first != nil {
		first.Bad, first.Total = bad, len(want)
		return st, first
	}
	return st, nil
}

// CompareMove checks a kernel that only moves data (a copy, a gather, a
// transpose): element i of got must be element from(i) of src, bit for
// bit, so no float64 reference is needed. The poisoned NaN never matches,
// and neither does a NaN of src's, which inputs should not hold.
func CompareMove(name string, got, src []float32, from func(i int) int, dims []int) (CheckStats, error) {
	st := CheckStats{N: len(got)}
	var first *CheckError
	bad := 0
	for i, g := range got {
		w := src[from(i)]
		if math.Float32bits(g) == math.Float32bits(w) && g == g {
			continue
		}
		bad++
		if first == nil {
			first = &CheckError{Name: name, Index: unflatten(i, dims), Got: float64(g), Want: float64(w)}
		}
	}
	if first != nil {
		first.Bad, first.Total = bad, len(got)
		st.MaxRelErr = math.Inf(1)
		return st, first
	}
	return st, nil
}

// unflatten turns a row-major flat index into one index per dimension.
func unflatten(i int, dims []int) []int {
	if len(dims) <= 1 {
		return []int{i}
	}
	out := make([]int, len(dims))
	for d := len(dims) - 1; d >= 0; d-- {
		out[d] = i % dims[d]
		i /= dims[d]
	}
	return out
}

// CompareNorm checks a low-precision output as a whole: the relative error
// ‖got − want‖ / ‖want‖ must be at most tol, and no element may be NaN (an
// element never written stays NaN after poisoning).
func CompareNorm(name string, got []float32, want []float64, dims []int, tol float64) (CheckStats, error) {
	st := CheckStats{Tol: tol, N: len(want)}
	if len(got) != len(want) {
		return st, fmt.Errorf("check: %s has %d elements, want %d", name, len(got), len(want))
	}
	var num, den float64
	for i := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			bad := 0
			for _, v := range got {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					bad++
				}
			}
			st.MaxRelErr = math.Inf(1)
			return st, &CheckError{Name: name, Index: unflatten(i, dims), Got: g, Want: want[i], Tol: tol, Bad: bad, Total: len(want)}
		}
		num += (g - want[i]) * (g - want[i])
		den += want[i] * want[i]
	}
	if den == 0 {
		den = 1
	}
	st.MaxRelErr = math.Sqrt(num / den)
	if st.MaxRelErr > tol {
		return st, fmt.Errorf("check: %s: relative error ‖out − ref‖/‖ref‖ = %.3g > tol %.3g", name, st.MaxRelErr, tol)
	}
	return st, nil
}

// TolFP32Sum is the tolerance for float32 sums of k products: the rounding
// error of a sum grows like √k, so past k = 2048 terms TolFP32Reduction
// widens by √(k/2048) (2× at k = 8192, where 1e-4 flagged ordinary float32
// rounding in a correct kernel).
func TolFP32Sum(k int) float64 {
	return TolFP32Reduction * math.Max(1, math.Sqrt(float64(k)/2048))
}

// PastTheEnd reports writes into guard, the poisoned words (Poison32)
// left behind an output called name of n elements, where a kernel that
// ignores n writes.
func PastTheEnd(name string, guard []float32, n int) error {
	first, count := -1, 0
	for i, v := range guard {
		if math.Float32bits(v) != Poison32 {
			if first < 0 {
				first = i
			}
			count++
		}
	}
	if count == 0 {
		return nil
	}
	return &PastTheEndError{Name: name, N: n, First: n + first, Count: count}
}

// PastTheEndError is a kernel that wrote beyond the end of its output.
type PastTheEndError struct {
	Name            string
	N, First, Count int
}

func (e *PastTheEndError) Error() string {
	what := fmt.Sprintf("%d elements past the end were", e.Count)
	if e.Count == 1 {
		what = "1 element past the end was"
	}
	return fmt.Sprintf("check: %s[%d] was written, past the end of %s (n = %d); %s overwritten: is the bounds check missing?",
		e.Name, e.First, e.Name, e.N, what)
}
