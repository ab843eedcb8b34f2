package gpu

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// DevicePtr is an address in device memory (CUdeviceptr). Offsets may be
// added to it; it is valid only in the process that allocated it.
type DevicePtr uint64

// HostPtr is an address of host memory allocated by a Device with AllocHost
// (pinned or pageable). It lives in the process that owns the context.
type HostPtr uint64

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Dim returns a Dim3; missing dimensions are 1.
func Dim(xyz ...int) Dim3 {
	d := Dim3{1, 1, 1}
	for i, v := range xyz {
		switch i {
		case 0:
			d.X = uint32(v)
		case 1:
			d.Y = uint32(v)
		case 2:
			d.Z = uint32(v)
		}
	}
	return d
}

// Blocks returns how many blocks of size block cover n items: ceil(n/block).
func Blocks(n, block int) int { return (n + block - 1) / block }

func (d Dim3) String() string { return fmt.Sprintf("%dx%dx%d", d.X, d.Y, d.Z) }

// Count is X·Y·Z.
func (d Dim3) Count() int { return int(d.X) * int(d.Y) * int(d.Z) }

// ArgKind is the C type of a kernel argument.
type ArgKind uint8

// The argument types a kernel may take.
const (
	ArgInt32 ArgKind = iota + 1
	ArgUint32
	ArgInt64
	ArgFloat32
	ArgFloat64
	ArgPtr
	ArgTensorMap // a CUtensorMap (128 bytes), see TensorMap
	ArgSlot      // a device pointer read from a slot at launch, see SlotPtr
)

var argKindNames = map[ArgKind]string{
	ArgInt32: "int", ArgUint32: "unsigned", ArgInt64: "long long",
	ArgFloat32: "float", ArgFloat64: "double", ArgPtr: "pointer",
	ArgTensorMap: "CUtensorMap", ArgSlot: "pointer (slot)",
}

func (k ArgKind) String() string {
	if s, ok := argKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("ArgKind(%d)", uint8(k))
}

// Size is the argument's size in bytes as the kernel reads it.
func (k ArgKind) Size() int {
	switch k {
	case ArgInt32, ArgUint32, ArgFloat32:
		return 4
	case ArgTensorMap:
		return tensorMapBytes
	}
	return 8
}

// Arg is one typed kernel argument. Its bits hold the value as the kernel
// reads it, little-endian, in the low Kind.Size() bytes.
type Arg struct {
	Kind ArgKind
	Bits uint64
	Map  *TensorMap // for ArgTensorMap, encoded by the driver at launch
}

// Int32 is a C int argument.
func Int32(v int32) Arg { return Arg{Kind: ArgInt32, Bits: uint64(uint32(v))} }

// Uint32 is a C unsigned int argument.
func Uint32(v uint32) Arg { return Arg{Kind: ArgUint32, Bits: uint64(v)} }

// Int64 is a C long long argument.
func Int64(v int64) Arg { return Arg{Kind: ArgInt64, Bits: uint64(v)} }

// Float32 is a C float argument.
func Float32(v float32) Arg { return Arg{Kind: ArgFloat32, Bits: uint64(math.Float32bits(v))} }

// Float64 is a C double argument.
func Float64(v float64) Arg { return Arg{Kind: ArgFloat64, Bits: math.Float64bits(v)} }

// Ptr is a device pointer argument.
func Ptr(p DevicePtr) Arg { return Arg{Kind: ArgPtr, Bits: uint64(p)} }

// SlotPtr is a device pointer argument whose value is whatever slot i
// holds when the launch is enqueued: memory an AllocSlot op allocated
// earlier in the same ops.
func SlotPtr(i int) Arg { return Arg{Kind: ArgSlot, Bits: uint64(i)} }

func (a Arg) String() string {
	switch a.Kind {
	case ArgInt32:
		return fmt.Sprint(int32(uint32(a.Bits)))
	case ArgUint32:
		return fmt.Sprint(uint32(a.Bits))
	case ArgInt64:
		return fmt.Sprint(int64(a.Bits))
	case ArgFloat32:
		return fmt.Sprint(math.Float32frombits(uint32(a.Bits)))
	case ArgFloat64:
		return fmt.Sprint(math.Float64frombits(a.Bits))
	case ArgPtr:
		return fmt.Sprintf("%#x", a.Bits)
	case ArgSlot:
		return fmt.Sprintf("slot %d", a.Bits)
	case ArgTensorMap:
		if a.Map != nil {
			return a.Map.String()
		}
	}
	return fmt.Sprintf("Arg(%d, %#x)", a.Kind, a.Bits)
}

// params is a kernel parameter array as cuLaunchKernel reads it: one
// pointer per argument, each to an 8-byte slot holding the value. Both arrays
// are pinned until release, so the driver may read them during a launch.
type params struct {
	vals   []uint64
	maps   []*[tensorMapBytes / 8]uint64 // one per ArgTensorMap, nil elsewhere
	ptrs   []uintptr
	pinner runtime.Pinner
}

// packArgs builds the parameter array for args; d encodes tensor maps. Call
// release when no launch that uses it can still be reading it.
func packArgs(d *driverAPI, args []Arg) (*params, error) {
	p := &params{vals: make([]uint64, len(args)+1), maps: make([]*[tensorMapBytes / 8]uint64, len(args)), ptrs: make([]uintptr, len(args)+1)}
	for i, a := range args {
		if _, ok := argKindNames[a.Kind]; !ok {
			return nil, fmt.Errorf("gpu: argument %d has no type (use gpu.Int32, gpu.Float32, gpu.Ptr, …)", i)
		}
		p.vals[i] = a.Bits
		if a.Kind == ArgTensorMap {
			if a.Map == nil {
				return nil, fmt.Errorf("gpu: argument %d is a tensor map with no TensorMap (use gpu.TMap)", i)
			}
			// A 128-byte allocation sits on a 128-byte boundary, as CUtensorMap's 64-byte alignment needs.
			p.maps[i] = new([tensorMapBytes / 8]uint64)
			if err := d.encodeTensorMap(p.maps[i], *a.Map); err != nil {
				return nil, fmt.Errorf("gpu: argument %d: %w", i, err)
			}
		}
	}
	p.pinner.Pin(&p.vals[0])
	p.pinner.Pin(&p.ptrs[0])
	for i := range args {
		if p.maps[i] != nil {
			p.pinner.Pin(p.maps[i])
			p.ptrs[i] = uintptr(unsafe.Pointer(p.maps[i]))
			continue
		}
		p.ptrs[i] = uintptr(unsafe.Pointer(&p.vals[i]))
	}
	return p, nil
}

// array is the value passed as kernelParams.
func (p *params) array() *uintptr { return &p.ptrs[0] }

func (p *params) release() { p.pinner.Unpin() }
