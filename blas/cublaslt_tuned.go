package blas

import (
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"cudarepl/gpu"
)

// cuBLASLt attribute values, from cublasLt.h.
const (
	ltLayoutBatchCount    = 5 // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32
	ltLayoutBatchOffset   = 6 // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64
	ltPrefMaxWorkspace    = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64
	ltHeuristicCandidates = 16
)

// ltAlgo is a cublasLtMatmulAlgo_t: 8 opaque 64-bit words.
type ltAlgo [8]uint64

// ltHeuristicResult is a cublasLtMatmulHeuristicResult_t.
type ltHeuristicResult struct {
	algo      ltAlgo
	workspace uint64
	state     int32
	waves     float32
	reserved  [4]int32
}

// tunedKey identifies the shapes and layouts that share a tuning: every
// field of g that changes which kernel runs (FastAccum too, though no
// product that takes it is tuned today), none of its memory.
func (g GEMM) tunedKey() string {
	return fmt.Sprintf("%d %d %d %v %v %v %v %d %d %d %d %d %v", g.M, g.N, g.K, g.TransA, g.TransB, g.Type, g.OutType, g.Compute, g.Batch, g.StrideA, g.StrideB, g.StrideC, g.FastAccum)
}

// prepareTuned runs g through cuBLASLt with the fastest of the heuristics'
// candidate algorithms, timing each the first time this shape is seen.
// Row-major C = A·B is computed as column-major Cᵀ = Bᵀ·Aᵀ, as prepareGEMM
// does.
func prepareTuned(x *gpu.Exec, g GEMM) (func() error, func(), error) {
	lt, err := cublasLt(x)
	if err != nil {
		return nil, nil, err
	}
	api := lt.api
	var blas cublasAPI // for status names
	out, compute := g.outType(), g.compute()
	var desc, pref uintptr
	var layouts [3]uintptr // B (cuBLASLt's A), A (its B), C
	var cleanups []func()
	done := func() {
		for _, f := range cleanups {
			f()
		}
	}
	fail := func(err error) (func() error, func(), error) { done(); return nil, nil, err }
	detail := g.Name() + " (tuned)"
	if err := blas.check(api.cublasLtMatmulDescCreate(&desc, int32(compute), gpu.FP32.DataType()), "cublasLtMatmulDescCreate", detail); err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, func() { api.cublasLtMatmulDescDestroy(desc) })
	var pin runtime.Pinner
	cleanups = append(cleanups, pin.Unpin)
	attrs := &struct {
		ta, tb int32
		batch  int32
		ws     uint64
		offs   [3]int64
	}{batch: int32(g.Batch), ws: ltWorkspace, offs: [3]int64{g.StrideB, g.StrideA, g.StrideC}}
	if g.TransB {
		attrs.ta = 1
	}
	if g.TransA {
		attrs.tb = 1
	}
	pin.Pin(attrs)
	for _, a := range []struct {
		attr int32
		v    *int32
	}{{ltDescTransA, &attrs.ta}, {ltDescTransB, &attrs.tb}} {
		if err := blas.check(api.cublasLtMatmulDescSetAttribute(desc, a.attr, unsafe.Pointer(a.v), 4), "cublasLtMatmulDescSetAttribute", detail); err != nil {
			return fail(err)
		}
	}
	// Stored shapes, column-major: B is N×K (K×N when transposed), A is K×M
	// (M×K when transposed), C is N×M.
	shapes := [3][3]int{{g.N, g.K, g.N}, {g.K, g.M, g.K}, {g.N, g.M, g.N}}
	if g.TransB {
		shapes[0] = [3]int{g.K, g.N, g.K}
	}
	if g.TransA {
		shapes[1] = [3]int{g.M, g.K, g.M}
	}
	types := [3]gpu.DType{g.Type, g.Type, out}
	for i := range layouts {
		sh := shapes[i]
		if err := blas.check(api.cublasLtMatrixLayoutCreate(&layouts[i], types[i].DataType(), uint64(sh[0]), uint64(sh[1]), int64(sh[2])), "cublasLtMatrixLayoutCreate", detail); err != nil {
			return fail(err)
		}
		l := layouts[i]
		cleanups = append(cleanups, func() { api.cublasLtMatrixLayoutDestroy(l) })
		if g.Batch > 1 {
			if err := blas.check(api.cublasLtMatrixLayoutSetAttribute(l, ltLayoutBatchCount, unsafe.Pointer(&attrs.batch), 4), "cublasLtMatrixLayoutSetAttribute", detail); err != nil {
				return fail(err)
			}
			if err := blas.check(api.cublasLtMatrixLayoutSetAttribute(l, ltLayoutBatchOffset, unsafe.Pointer(&attrs.offs[i]), 8), "cublasLtMatrixLayoutSetAttribute", detail); err != nil {
				return fail(err)
			}
		}
	}
	s := &gemmScalars{}
	s.v[0], s.v[1] = math.Float32bits(g.Alpha), math.Float32bits(g.Beta)
	pin.Pin(&s.v[0])
	call := func(algo *ltAlgo) error {
		return blas.check(api.cublasLtMatmul(lt.h, desc, s.alpha(), uint64(g.B), layouts[0], uint64(g.A), layouts[1], s.beta(),
			uint64(g.C), layouts[2], uint64(g.C), layouts[2], uintptr(unsafe.Pointer(algo)), uint64(lt.ws), ltWorkspace, x.Stream()), "cublasLtMatmul", detail)
	}

	key := g.tunedKey()
	best, ok := lt.tuned[key]
	if !ok {
		if err := blas.check(api.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", detail); err != nil {
			return fail(err)
		}
		defer api.cublasLtMatmulPreferenceDestroy(pref)
		if err := blas.check(api.cublasLtMatmulPreferenceSetAttribute(pref, ltPrefMaxWorkspace, unsafe.Pointer(&attrs.ws), 8), "cublasLtMatmulPreferenceSetAttribute", detail); err != nil {
			return fail(err)
		}
		results := make([]ltHeuristicResult, ltHeuristicCandidates)
		pin.Pin(&results[0])
		var n int32
		if err := blas.check(api.cublasLtMatmulAlgoGetHeuristic(lt.h, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref,
			ltHeuristicCandidates, unsafe.Pointer(&results[0]), &n), "cublasLtMatmulAlgoGetHeuristic", detail); err != nil {
			return fail(err)
		}
		fastest := time.Duration(math.MaxInt64)
		for i := range int(n) {
			if results[i].state != 0 || results[i].workspace > ltWorkspace {
				continue
			}
			algo := &results[i].algo
			ts, err := x.Time(detail, func() error { return call(algo) }, 2, 7)
			if err != nil {
				continue // this candidate cannot run here; the others may
			}
			if t := gpu.Summarize(ts).Median; t < fastest {
				fastest, best, ok = t, results[i].algo, true
			}
		}
		if !ok {
			return fail(fmt.Errorf("gpu: %s: none of the %d algorithms cuBLASLt offered ran", detail, n))
		}
		lt.tuned[key] = best
	}
	algo := new(ltAlgo)
	*algo = best
	pin.Pin(algo)
	return func() error { return call(algo) }, done, nil
}
