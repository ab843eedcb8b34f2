package gpu

import "fmt"

// DType is an element type of device data, as cuBLAS names it (cudaDataType).
type DType int

// The element types the bindings know.
const (
	FP32 DType = iota + 1
	FP64
	FP16
	BF16
	FP8E4M3 // 8 bits: 4 of exponent, 3 of mantissa; cuBLASLt only
	Bool    // a mask's true or false, inside cuDNN graphs only
)

var dtypes = map[DType]struct {
	name string
	size int
	cuda int32 // cudaDataType_t
}{
	FP32:    {"float32", 4, 0},
	FP64:    {"float64", 8, 1},
	FP16:    {"float16", 2, 2},
	BF16:    {"bfloat16", 2, 14},
	FP8E4M3: {"float8 e4m3", 1, 28},
	Bool:    {"bool", 1, -1},
}

func (t DType) String() string {
	if d, ok := dtypes[t]; ok {
		return d.name
	}
	return fmt.Sprintf("DType(%d)", int(t))
}

// Size is the element size in bytes.
func (t DType) Size() int { return dtypes[t].size }

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
