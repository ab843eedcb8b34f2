package numeric_test

import (
	"fmt"

	"cudarepl/numeric"
)

// A kernel's output checked against its float64 reference: one element
// is off by more than float32 rounding.
func ExampleCompare() {
	got := []float32{1, 2.5, 3}
	want := []float64{1, 2, 3}
	_, err := numeric.Compare("c", got, want, []int{3}, numeric.TolFP32)
	fmt.Println(err)
	// Output: check: c[1] = 2.5, want 2 (|diff| 0.5 > tol 1e-05); 1 of 3 differ
}
