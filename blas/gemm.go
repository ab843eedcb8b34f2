package blas

import (
	"fmt"

	"cudarepl/gpu"
)

// GEMM is C = Alpha·op(A)·op(B) + Beta·C through cuBLAS, with every matrix
// row-major (as in C and Go): A is M×K (K×M when TransA), B is K×N (N×K
// when TransB), C is M×N. With Batch > 1 it is a strided batched GEMM whose
// i-th problem starts Stride elements after the (i-1)-th. It is a gpu.Op.
type GEMM struct {
	M, N, K        int
	A, B, C        gpu.DevicePtr
	TransA, TransB bool
	Alpha, Beta    float32
	Type           gpu.DType // of A and B: FP32, FP16 or BF16
	OutType        gpu.DType // of C; Type when 0
	Compute        Compute   // Compute32F when 0
	Batch          int
	StrideA        int64
	StrideB        int64
	StrideC        int64
	// Tuned runs the product through cuBLASLt with the fastest of the
	// algorithms its heuristics offer for this shape, each timed on first
	// use (once per shape and context), instead of cuBLAS's default pick.
	Tuned bool
	// FastAccum turns on cuBLASLt's FP8 fast accumulation
	// (CUBLASLT_MATMUL_DESC_FAST_ACCUM), off by default. It applies only
	// to an FP8 product (Type FP8E4M3), which goes through cuBLASLt; set
	// on any other it is an error. NVIDIA's cublasLt.h says what it
	// trades: with it on, "problem execution might be faster but at the
	// cost of lower accuracy because intermediate results will not
	// periodically be promoted to a higher precision".
	FastAccum bool
}

// Name says the shape and the input type, and fast accumulation where it
// is on, so that the two FP8 products are never taken for one another.
func (g GEMM) Name() string {
	name := fmt.Sprintf("gemm %dx%dx%d %s", g.M, g.N, g.K, g.Type)
	if g.FastAccum {
		name += ", fast accumulation"
	}
	return name
}

// Prepare finds the context's cuBLAS (or cuBLASLt) handle and builds the
// call; an FP8 product goes through cuBLASLt, which alone takes FP8.
func (g GEMM) Prepare(x *gpu.Exec) (gpu.Step, error) {
	var (
		run     func() error
		release func()
		err     error
	)
	switch {
	case g.Type == gpu.FP8E4M3:
		run, release, err = prepareFP8(x, g)
	case g.Tuned:
		if err = g.validate(); err == nil {
			run, release, err = prepareTuned(x, g)
		}
	default:
		if err = g.validate(); err == nil {
			run, release, err = prepareGEMM(x, g)
		}
	}
	if err != nil {
		return gpu.Step{}, err
	}
	return gpu.Step{Enqueue: run, Release: release, Uses: []gpu.DevicePtr{g.A, g.B, g.C}}, nil
}

// outType is the type of C: OutType, or Type when it is 0.
func (g GEMM) outType() gpu.DType {
	if g.OutType == 0 {
		return g.Type
	}
	return g.OutType
}

// compute is how the product accumulates: Compute, or Compute32F when 0.
func (g GEMM) compute() Compute {
	if g.Compute == 0 {
		return Compute32F
	}
	return g.Compute
}

// validate refuses what cuBLAS would refuse with a bare status, and what
// this package does not do, for every product but FP8 (prepareFP8 checks
// its own).
func (g GEMM) validate() error {
	switch {
	case g.M <= 0 || g.N <= 0 || g.K <= 0:
		return fmt.Errorf("gpu: %s: sizes must be positive", g.Name())
	case g.A == 0 || g.B == 0 || g.C == 0:
		return fmt.Errorf("gpu: %s: A, B and C must all be device memory", g.Name())
	case g.Type != gpu.FP32 && g.Type != gpu.FP16 && g.Type != gpu.BF16:
		return fmt.Errorf("gpu: %s: input type %s is not one of float32, float16, bfloat16", g.Name(), g.Type)
	case g.OutType != 0 && g.OutType != gpu.FP32 && g.OutType != gpu.FP16 && g.OutType != gpu.BF16:
		return fmt.Errorf("gpu: %s: output type %s is not one of float32, float16, bfloat16", g.Name(), g.OutType)
	case g.Batch > 1 && (g.StrideA <= 0 || g.StrideB <= 0 || g.StrideC <= 0):
		return fmt.Errorf("gpu: %s: a batch of %d needs positive strides", g.Name(), g.Batch)
	case g.FastAccum:
		return fmt.Errorf("gpu: %s: FastAccum applies only to FP8 products (Type float8 e4m3), not to %s inputs", g.Name(), g.Type)
	}
	return nil
}

// Compute is how cuBLAS accumulates a GEMM (cublasComputeType_t).
type Compute int

// The compute types the bindings expose.
const (
	Compute32F         Compute = 68 // fp32 arithmetic throughout
	Compute32FPedantic Compute = 69 // fp32, no reduced-precision shortcuts at all
	Compute32FFastTF32 Compute = 77 // fp32 accumulation, inputs rounded to TF32 on tensor cores
	Compute32FFast16BF Compute = 75 // fp32 accumulation, inputs rounded to bf16
	Compute16F         Compute = 64 // fp16 arithmetic and accumulation
)

func (c Compute) String() string {
	switch c {
	case Compute32F:
		return "fp32"
	case Compute32FPedantic:
		return "fp32 (pedantic)"
	case Compute32FFastTF32:
		return "tf32"
	case Compute32FFast16BF:
		return "fp32 (bf16 inputs)"
	case Compute16F:
		return "fp16"
	}
	return fmt.Sprintf("Compute(%d)", int(c))
}

func init() {
	gpu.RegisterLibrary(gpu.Library{Name: "cuBLAS", Version: Version, Types: []any{GEMM{}}})
}
