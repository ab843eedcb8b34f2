package gpu

import (
	"fmt"
	"unsafe"
)

// TensorMap describes a tile copy for the Hopper tensor memory accelerator
// (TMA): a row-major matrix in device memory, or a batch of them stored back
// to back, and the box of it that one cp.async.bulk.tensor instruction moves
// into shared memory. The driver encodes it (cuTensorMapEncodeTiled) into the
// 128-byte CUtensorMap that the kernel takes as a const __grid_constant__
// parameter. Parts of a box that fall outside the matrix arrive as zeros.
type TensorMap struct {
	Base       DevicePtr
	Type       DType // FP16, BF16 or FP32
	Rows, Cols int   // the matrix; Cols·size must be a multiple of 16 bytes
	// Count, when set, makes the map 3-D: Count matrices of Rows×Cols, one
	// after another (one is a batch too), and a box never reaches from one
	// into the next. The kernel then copies with cp.async.bulk.tensor.3d and
	// a third coordinate, the matrix. 0 is a plain 2-D map.
	Count      int
	BoxRows    int  // rows per copy, at most 256
	BoxCols    int  // columns per copy; with Swizzle128, BoxCols·size ≤ 128 bytes
	Swizzle128 bool // store each 128-byte row of the box XOR-swizzled by its row mod 8
}

// TMap is a CUtensorMap argument built from m at launch.
func TMap(m TensorMap) Arg { return Arg{Kind: ArgTensorMap, Map: &m} }

func (m TensorMap) String() string {
	batch := ""
	if m.Count > 0 {
		batch = fmt.Sprintf("%d × ", m.Count)
	}
	return fmt.Sprintf("tensor map %s %s%dx%d box %dx%d", m.Type, batch, m.Rows, m.Cols, m.BoxRows, m.BoxCols)
}

// tensorMapBytes is sizeof(CUtensorMap).
const tensorMapBytes = 128

// tensorMapType maps a DType to CUtensorMapDataType.
var tensorMapType = map[DType]int32{FP16: 6, FP32: 7, BF16: 9}

// check reports the first way m breaks the driver's rules, in its terms.
func (m TensorMap) check() error {
	_, ok := tensorMapType[m.Type]
	size := m.Type.Size()
	switch {
	case !ok:
		return fmt.Errorf("%s: element type must be float16, bfloat16 or float32", m)
	case m.Base == 0 || m.Base%16 != 0:
		return fmt.Errorf("%s: base address %#x is not 16-byte aligned", m, uint64(m.Base))
	case m.Rows < 1 || m.Cols < 1 || m.Count < 0:
		return fmt.Errorf("%s: empty matrix", m)
	case m.Cols*size%16 != 0:
		return fmt.Errorf("%s: a row of %d bytes is not a multiple of 16", m, m.Cols*size)
	case m.BoxRows < 1 || m.BoxRows > 256 || m.BoxCols < 1 || m.BoxCols > 256:
		return fmt.Errorf("%s: box sides must be 1 to 256", m)
	case m.BoxCols*size%16 != 0:
		return fmt.Errorf("%s: a box row of %d bytes is not a multiple of 16", m, m.BoxCols*size)
	case m.Swizzle128 && m.BoxCols*size > 128:
		return fmt.Errorf("%s: a 128-byte swizzle needs box rows of at most 128 bytes, not %d", m, m.BoxCols*size)
	}
	return nil
}

// encodeTensorMap fills out (128 bytes, 64-byte aligned) with m's CUtensorMap.
func (d *driverAPI) encodeTensorMap(out *[tensorMapBytes / 8]uint64, m TensorMap) error {
	if d == nil || d.cuTensorMapEncodeTiled == nil {
		return &UnavailableError{Reason: "this driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 or newer)"}
	}
	if err := m.check(); err != nil {
		return err
	}
	// Innermost first; the 3-D form's extra dimension is the matrix, one
	// matrix deep per box. Strides are in bytes and skip the innermost.
	rank := 2
	dims := [3]uint64{uint64(m.Cols), uint64(m.Rows), 1}
	strides := [2]uint64{uint64(m.Cols * m.Type.Size()), uint64(m.Rows * m.Cols * m.Type.Size())}
	box := [3]uint32{uint32(m.BoxCols), uint32(m.BoxRows), 1}
	elem := [3]uint32{1, 1, 1}
	if m.Count > 0 {
		rank, dims[2] = 3, uint64(m.Count)
	}
	var swizzle int32 // CU_TENSOR_MAP_SWIZZLE_NONE
	if m.Swizzle128 {
		swizzle = 3 // CU_TENSOR_MAP_SWIZZLE_128B
	}
	const interleaveNone, l2Promote128, oobFillZero = 0, 2, 0
	r := d.cuTensorMapEncodeTiled(unsafe.Pointer(out), tensorMapType[m.Type], uint32(rank), uint64(m.Base),
		&dims[0], &strides[0], &box[0], &elem[0], interleaveNone, swizzle, l2Promote128, oobFillZero)
	return d.check(r, "cuTensorMapEncodeTiled", m.String())
}
