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

// DataType is the type's cudaDataType_t value, as cuBLAS takes it; -1 for
// Bool, which has none.
func (t DType) DataType() int32 { return dtypes[t].cuda }
