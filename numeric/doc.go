// Package numeric is the course's CPU numerics: the float64 references a
// kernel's output is checked against, the comparisons that judge it, and
// the parallel bands that make large references quick.
//
// A check compares every element (or, past FullCheckMACs multiply-adds, a
// sample) with a float64 reference, within a tolerance that follows the
// precision of the arithmetic (TolFP32, TolTF32, TolHalf…). A failure is a
// *CheckError naming the first wrong element, both values and how many
// differ:
//
//	check: c[1] = 2.5, want 2 (|diff| 0.5 > tol 1e-05); 1 of 3 differ
//
// Outputs are poisoned before a kernel runs (Poison32, Poison16), so an
// element never written is NaN and fails, and the poisoned words behind an
// output catch a kernel that writes past its end (PastTheEnd).
//
// The package knows nothing of GPUs or lessons: it takes and returns plain
// Go values, and imports no package of this module.
package numeric
