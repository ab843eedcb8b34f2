package numeric

import "math/rand/v2"

// FullCheckMACs bounds the CPU reference of a matrix product: past this many
// multiply-adds, a random sample of C's elements is checked instead.
const FullCheckMACs = 6e8

// RandomMatrix returns n fresh random values in [-1, 1) as float32 for the
// GPU, and the same values as float64 for the CPU reference.
func RandomMatrix(n int) ([]float32, []float64) {
	v, ref := make([]float32, n), make([]float64, n)
	for i := range v {
		v[i] = rand.Float32()*2 - 1
		ref[i] = float64(v[i])
	}
	return v, ref
}

// RandomFloats returns n random values in [-1, 1), the same for the same
// seed: inputs for kernels that only move data, checked bit for bit.
func RandomFloats(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(2*r.Float64() - 1)
	}
	return out
}

// MatmulSample picks the elements of an m×n product to check: all of them
// when the product is small enough to recompute on the CPU (nil), else 2048
// at random plus the first and the last.
func MatmulSample(m, n, k int) []int {
	if float64(m)*float64(n)*float64(k) <= FullCheckMACs {
		return nil
	}
	idx := make([]int, 0, 2050)
	for range 2048 {
		idx = append(idx, rand.IntN(m*n))
	}
	return append(idx, 0, m*n-1)
}

// MatmulCheck compares the elements idx (nil: all) of the row-major m×n
// product C = A·B, read back as got, with a float64 product of a (m×k) and
// b (k×n): elementwise at tol when norm is false, else ‖out − ref‖/‖ref‖.
// A mismatch is reported at its row and column.
func MatmulCheck(got []float32, a, b []float64, m, n, k int, idx []int, tol float64, norm bool) (CheckStats, error) {
	if idx == nil {
		idx = make([]int, m*n)
		for i := range idx {
			idx[i] = i
		}
	}
	want, sub := make([]float64, len(idx)), make([]float32, len(idx))
	for s, e := range idx {
		i, j := e/n, e%n
		var sum float64
		for p := 0; p < k; p++ {
			sum += a[i*k+p] * b[p*n+j]
		}
		want[s], sub[s] = sum, got[e]
	}
	compare := Compare
	if norm {
		compare = CompareNorm
	}
	st, err := compare("C", sub, want, nil, tol)
	if ce, ok := err.(*CheckError); ok {
		e := idx[ce.Index[0]]
		ce.Index = []int{e / n, e % n}
	}
	return st, err
}
