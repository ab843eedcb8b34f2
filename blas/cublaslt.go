package blas

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"cudarepl/gpu"
	"cudarepl/internal/dl"
)

// cublasLtAPI holds the cuBLASLt entry points used for FP8 products, bound
// from libcublasLt. See https://docs.nvidia.com/cuda/cublas/#using-the-cublaslt-api.
type cublasLtAPI struct {
	lib *dl.Library

	cublasLtCreate                 func(h *uintptr) int32
	cublasLtMatmulDescCreate       func(d *uintptr, compute, scale int32) int32
	cublasLtMatmulDescDestroy      func(d uintptr) int32
	cublasLtMatmulDescSetAttribute func(d uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	cublasLtMatrixLayoutCreate     func(l *uintptr, dtype int32, rows, cols uint64, ld int64) int32
	cublasLtMatrixLayoutDestroy    func(l uintptr) int32
	cublasLtMatmul                 func(h, desc uintptr, alpha uintptr, a uint64, adesc uintptr, b uint64, bdesc uintptr, beta uintptr, c uint64, cdesc uintptr, d uint64, ddesc uintptr, algo uintptr, ws uint64, wsSize uint64, stream uintptr) int32

	cublasLtMatrixLayoutSetAttribute     func(l uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	cublasLtMatmulPreferenceCreate       func(p *uintptr) int32
	cublasLtMatmulPreferenceDestroy      func(p uintptr) int32
	cublasLtMatmulPreferenceSetAttribute func(p uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	cublasLtMatmulAlgoGetHeuristic       func(h, desc, a, b, c, d, pref uintptr, requested int32, results unsafe.Pointer, count *int32) int32
}

var loadCUBLASLt = sync.OnceValues(func() (*cublasLtAPI, error) {
	lib, err := dl.Open("cublas", "cuBLASLt not found", "install the CUDA toolkit's cuBLAS or set CUDA_PATH",
		"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so",
		"cublasLt64_13.dll", "cublasLt64_12.dll", "cublasLt64_11.dll")
	if err != nil {
		return nil, err
	}
	b := &cublasLtAPI{lib: lib}
	err = lib.Bind(map[string]any{
		"cublasLtCreate":                       &b.cublasLtCreate,
		"cublasLtMatmulDescCreate":             &b.cublasLtMatmulDescCreate,
		"cublasLtMatmulDescDestroy":            &b.cublasLtMatmulDescDestroy,
		"cublasLtMatmulDescSetAttribute":       &b.cublasLtMatmulDescSetAttribute,
		"cublasLtMatrixLayoutCreate":           &b.cublasLtMatrixLayoutCreate,
		"cublasLtMatrixLayoutDestroy":          &b.cublasLtMatrixLayoutDestroy,
		"cublasLtMatmul":                       &b.cublasLtMatmul,
		"cublasLtMatrixLayoutSetAttribute":     &b.cublasLtMatrixLayoutSetAttribute,
		"cublasLtMatmulPreferenceCreate":       &b.cublasLtMatmulPreferenceCreate,
		"cublasLtMatmulPreferenceDestroy":      &b.cublasLtMatmulPreferenceDestroy,
		"cublasLtMatmulPreferenceSetAttribute": &b.cublasLtMatmulPreferenceSetAttribute,
		"cublasLtMatmulAlgoGetHeuristic":       &b.cublasLtMatmulAlgoGetHeuristic,
	})
	if err != nil {
		return nil, err
	}
	return b, nil
})

// cublasLtMatmulDescAttributes_t values, from cublasLt.h.
const (
	ltDescTransA = 3 // CUBLASLT_MATMUL_DESC_TRANSA, int32
	ltDescTransB = 4 // CUBLASLT_MATMUL_DESC_TRANSB, int32
	// ltDescFastAccum is CUBLASLT_MATMUL_DESC_FAST_ACCUM, an int8_t,
	// default 0: 25 in CUDA 12.6's cublasLt.h, and in the copy of the
	// enum that Triton keeps (third_party/nvidia/include/cublas_types.h).
	ltDescFastAccum = 25
)

// ltWorkspace is the scratch memory handed to every cuBLASLt product.
const ltWorkspace = 32 << 20

// ltHandle is a cuBLASLt handle with its workspace, and the algorithm
// chosen for each shape a tuned product has run; on the GPU thread.
type ltHandle struct {
	api   *cublasLtAPI
	x     *gpu.Exec
	h     uintptr
	ws    gpu.DevicePtr
	tuned map[string]ltAlgo // by GEMM.tunedKey
}

// Close frees the workspace, with the context.
func (h *ltHandle) Close() error { h.x.Free(h.ws); return nil }

// cublasLt returns the context's cuBLASLt handle, creating it on first use.
func cublasLt(x *gpu.Exec) (*ltHandle, error) {
	s, err := x.State(cublasLtKey, func() (any, error) {
		api, err := loadCUBLASLt()
		if err != nil {
			return nil, err
		}
		h := &ltHandle{api: api, x: x, tuned: map[string]ltAlgo{}}
		var blas cublasAPI // for status names
		if err := blas.check(api.cublasLtCreate(&h.h), "cublasLtCreate", ""); err != nil {
			return nil, err
		}
		if h.ws, err = x.Alloc(ltWorkspace, "cuBLASLt workspace"); err != nil {
			return nil, err
		}
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	return s.(*ltHandle), nil
}

// prepareFP8 runs an FP8 (E4M3) GEMM through cuBLASLt, which takes FP8
// operands only in its "TN" layout: in row-major terms, B must be given
// transposed (N×K, TransB set) and A not. C is bf16. FastAccum sets
// cuBLASLt's fast accumulation on the product's descriptor.
func prepareFP8(x *gpu.Exec, g GEMM) (func() error, func(), error) {
	switch {
	case g.TransA || !g.TransB:
		return nil, nil, fmt.Errorf("gpu: %s: FP8 needs B given transposed (N×K, TransB) and A as is", g.Name())
	case g.M%16 != 0 || g.N%16 != 0 || g.K%16 != 0:
		return nil, nil, fmt.Errorf("gpu: %s: FP8 needs M, N and K multiples of 16", g.Name())
	case g.OutType != gpu.BF16:
		return nil, nil, fmt.Errorf("gpu: %s: FP8 products here write bf16 (OutType BF16)", g.Name())
	case g.Batch > 1:
		return nil, nil, fmt.Errorf("gpu: %s: no batched FP8 products", g.Name())
	}
	if info := x.Info(); info.Major*10+info.Minor < 89 {
		return nil, nil, fmt.Errorf("gpu: %s: FP8 needs compute capability 8.9 or newer; this GPU has %d.%d", g.Name(), info.Major, info.Minor)
	}
	lt, err := cublasLt(x)
	if err != nil {
		return nil, nil, err
	}
	api := lt.api
	var blas cublasAPI
	var desc, la, lb, lc uintptr
	var cleanups []func()
	done := func() {
		for _, f := range cleanups {
			f()
		}
	}
	fail := func(err error) (func() error, func(), error) { done(); return nil, nil, err }
	if err := blas.check(api.cublasLtMatmulDescCreate(&desc, int32(Compute32F), gpu.FP32.DataType()), "cublasLtMatmulDescCreate", ""); err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, func() { api.cublasLtMatmulDescDestroy(desc) })
	// Column-major, as cuBLASLt sees it: D (N×M) = op(Bᵀ as K×N)ᵀ · (A as K×M).
	transT, transN := int32(1), int32(0)
	var pin runtime.Pinner
	pin.Pin(&transT)
	pin.Pin(&transN)
	defer pin.Unpin()
	if err := blas.check(api.cublasLtMatmulDescSetAttribute(desc, ltDescTransA, unsafe.Pointer(&transT), 4), "cublasLtMatmulDescSetAttribute", "TRANSA"); err != nil {
		return fail(err)
	}
	if err := blas.check(api.cublasLtMatmulDescSetAttribute(desc, ltDescTransB, unsafe.Pointer(&transN), 4), "cublasLtMatmulDescSetAttribute", "TRANSB"); err != nil {
		return fail(err)
	}
	if g.FastAccum {
		// Set only when asked for, so that the product without it is the
		// same call as before the field existed.
		fast := int8(1)
		pin.Pin(&fast)
		if err := blas.check(api.cublasLtMatmulDescSetAttribute(desc, ltDescFastAccum, unsafe.Pointer(&fast), 1), "cublasLtMatmulDescSetAttribute", "FAST_ACCUM"); err != nil {
			return fail(err)
		}
	}
	for _, l := range []struct {
		out        *uintptr
		dtype      gpu.DType
		rows, cols int
	}{{&la, gpu.FP8E4M3, g.K, g.N}, {&lb, gpu.FP8E4M3, g.K, g.M}, {&lc, gpu.BF16, g.N, g.M}} {
		if err := blas.check(api.cublasLtMatrixLayoutCreate(l.out, l.dtype.DataType(), uint64(l.rows), uint64(l.cols), int64(l.rows)), "cublasLtMatrixLayoutCreate", ""); err != nil {
			return fail(err)
		}
		p := *l.out
		cleanups = append(cleanups, func() { api.cublasLtMatrixLayoutDestroy(p) })
	}
	s := &gemmScalars{}
	s.v[0], s.v[1] = math.Float32bits(g.Alpha), math.Float32bits(g.Beta)
	s.pinner.Pin(&s.v[0])
	cleanups = append(cleanups, s.pinner.Unpin)
	run := func() error {
		return blas.check(api.cublasLtMatmul(lt.h, desc, s.alpha(), uint64(g.B), la, uint64(g.A), lb, s.beta(),
			uint64(g.C), lc, uint64(g.C), lc, 0, uint64(lt.ws), ltWorkspace, x.Stream()), "cublasLtMatmul", g.Name())
	}
	return run, done, nil
}
