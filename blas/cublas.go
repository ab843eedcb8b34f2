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

// cublasAPI holds the cuBLAS entry points, bound from libcublas.
// See https://docs.nvidia.com/cuda/cublas/.
type cublasAPI struct {
	lib     *dl.Library
	version string

	cublasCreate               func(h *uintptr) int32
	cublasDestroy              func(h uintptr) int32
	cublasSetStream            func(h, s uintptr) int32
	cublasGetProperty          func(typ int32, v *int32) int32
	cublasGetStatusName        func(s int32) *byte
	cublasSgemm                func(h uintptr, ta, tb, m, n, k int32, alpha uintptr, a uint64, lda int32, b uint64, ldb int32, beta uintptr, c uint64, ldc int32) int32
	cublasGemmEx               func(h uintptr, ta, tb, m, n, k int32, alpha uintptr, a uint64, at, lda int32, b uint64, bt, ldb int32, beta uintptr, c uint64, ct, ldc int32, compute, algo int32) int32
	cublasGemmStridedBatchedEx func(h uintptr, ta, tb, m, n, k int32, alpha uintptr, a uint64, at, lda int32, sa int64, b uint64, bt, ldb int32, sb int64, beta uintptr, c uint64, ct, ldc int32, sc int64, batch, compute, algo int32) int32
}

// Version returns the version of the cuBLAS that products run on, e.g.
// "13.1.0", or the *dl.UnavailableError that says why it cannot be loaded.
func Version() (string, error) {
	b, err := loadCUBLAS()
	if err != nil {
		return "", err
	}
	return b.version, nil
}

var loadCUBLAS = sync.OnceValues(func() (*cublasAPI, error) {
	lib, err := dl.Open("cublas", "cuBLAS not found", "install the CUDA toolkit's cuBLAS or set CUDA_PATH",
		"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so",
		"cublas64_13.dll", "cublas64_12.dll", "cublas64_11.dll")
	if err != nil {
		return nil, err
	}
	b := &cublasAPI{lib: lib}
	err = lib.Bind(map[string]any{
		"cublasCreate_v2":            &b.cublasCreate,
		"cublasDestroy_v2":           &b.cublasDestroy,
		"cublasSetStream_v2":         &b.cublasSetStream,
		"cublasGetProperty":          &b.cublasGetProperty,
		"cublasGetStatusName":        &b.cublasGetStatusName,
		"cublasSgemm_v2":             &b.cublasSgemm,
		"cublasGemmEx":               &b.cublasGemmEx,
		"cublasGemmStridedBatchedEx": &b.cublasGemmStridedBatchedEx,
	}, "cublasGetStatusName")
	if err != nil {
		return nil, err
	}
	var v [3]int32
	for i := range v {
		b.cublasGetProperty(int32(i), &v[i]) // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
	}
	b.version = fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	return b, nil
})

var cublasStatusNames = map[int32]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (b *cublasAPI) check(s int32, call, detail string) error {
	if s == 0 {
		return nil
	}
	name, ok := cublasStatusNames[s]
	if b.cublasGetStatusName != nil {
		name, ok = dl.GoString(b.cublasGetStatusName(s)), true
	}
	if !ok {
		name = fmt.Sprintf("cublasStatus_t(%d)", s)
	}
	return &gpu.CUDAError{Call: call, Detail: detail, Code: int(s), Name: name}
}

// stateKey names the package's state in an Exec.
type stateKey int

const (
	cublasKey   stateKey = iota // *blasHandle
	cublasLtKey                 // *ltHandle
)

// blasHandle is a cuBLAS handle bound to the context's stream.
type blasHandle struct {
	api *cublasAPI
	h   uintptr
}

// Close destroys the handle, with the context.
func (h *blasHandle) Close() error { h.api.cublasDestroy(h.h); return nil }

// cublas returns the context's handle, creating it on first use; on the GPU
// thread. Creating one takes a while, so contexts that never GEMM never pay.
func cublas(x *gpu.Exec) (*blasHandle, error) {
	s, err := x.State(cublasKey, func() (any, error) {
		api, err := loadCUBLAS()
		if err != nil {
			return nil, err
		}
		h := &blasHandle{api: api}
		if err := api.check(api.cublasCreate(&h.h), "cublasCreate_v2", ""); err != nil {
			return nil, err
		}
		if err := api.check(api.cublasSetStream(h.h, x.Stream()), "cublasSetStream_v2", ""); err != nil {
			h.Close()
			return nil, err
		}
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	return s.(*blasHandle), nil
}

// gemmScalars holds alpha and beta where cuBLAS reads them, pinned.
type gemmScalars struct {
	v      [2]uint32 // alpha, beta: float32 bits, or fp16 bits for Compute16F
	pinner runtime.Pinner
}

func (s *gemmScalars) alpha() uintptr { return uintptr(unsafe.Pointer(&s.v[0])) }
func (s *gemmScalars) beta() uintptr  { return uintptr(unsafe.Pointer(&s.v[1])) }

// prepareGEMM maps a row-major GEMM onto column-major cuBLAS. A row-major
// matrix is its transpose in column-major order, so C = A·B row-major is
// Cᵀ = Bᵀ·Aᵀ column-major: swap the operands and M with N, keep the flags.
func prepareGEMM(x *gpu.Exec, g GEMM) (func() error, func(), error) {
	h, err := cublas(x)
	if err != nil {
		return nil, nil, err
	}
	api := h.api
	out, compute := g.outType(), g.compute()
	s := &gemmScalars{}
	s.v[0], s.v[1] = math.Float32bits(g.Alpha), math.Float32bits(g.Beta)
	if compute == Compute16F {
		s.v[0], s.v[1] = uint32(gpu.Float16Bits(g.Alpha)), uint32(gpu.Float16Bits(g.Beta))
	}
	s.pinner.Pin(&s.v[0])

	op := func(t bool) int32 {
		if t {
			return 1 // CUBLAS_OP_T
		}
		return 0 // CUBLAS_OP_N
	}
	ta, tb := op(g.TransA), op(g.TransB)
	lda, ldb := g.K, g.N
	if g.TransA {
		lda = g.M
	}
	if g.TransB {
		ldb = g.K
	}
	m, n, k := int32(g.N), int32(g.M), int32(g.K)
	detail := g.Name()
	const algoDefault = -1
	var run func() error
	switch {
	case g.Batch > 1:
		run = func() error {
			return api.check(api.cublasGemmStridedBatchedEx(h.h, tb, ta, m, n, k, s.alpha(),
				uint64(g.B), g.Type.DataType(), int32(ldb), g.StrideB,
				uint64(g.A), g.Type.DataType(), int32(lda), g.StrideA, s.beta(),
				uint64(g.C), out.DataType(), int32(g.N), g.StrideC, int32(g.Batch), int32(compute), algoDefault),
				"cublasGemmStridedBatchedEx", detail)
		}
	case g.Type == gpu.FP32 && out == gpu.FP32 && compute == Compute32F:
		run = func() error {
			return api.check(api.cublasSgemm(h.h, tb, ta, m, n, k, s.alpha(), uint64(g.B), int32(ldb),
				uint64(g.A), int32(lda), s.beta(), uint64(g.C), int32(g.N)), "cublasSgemm_v2", detail)
		}
	default:
		run = func() error {
			return api.check(api.cublasGemmEx(h.h, tb, ta, m, n, k, s.alpha(),
				uint64(g.B), g.Type.DataType(), int32(ldb), uint64(g.A), g.Type.DataType(), int32(lda), s.beta(),
				uint64(g.C), out.DataType(), int32(g.N), int32(compute), algoDefault), "cublasGemmEx", detail)
		}
	}
	return run, s.pinner.Unpin, nil
}
