package gpu

import (
	"fmt"
	"unsafe"
)

// Element is a fixed-size number that device memory can hold as is.
// uint16 carries fp16 and bf16 bits (see Float16Bits, BFloat16Bits).
type Element interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// asBytes views v's memory as bytes, without copying.
func asBytes[T Element](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// Upload allocates device memory for v and copies v into it.
func Upload[T Element](d Device, v []T) (DevicePtr, error) {
	b := asBytes(v)
	p, err := d.Alloc(int64(len(b)))
	if err != nil {
		return 0, err
	}
	if err := d.Write(p, b); err != nil {
		d.Free(p)
		return 0, err
	}
	return p, nil
}

// WriteSlice copies v to device memory at dst.
func WriteSlice[T Element](d Device, dst DevicePtr, v []T) error { return d.Write(dst, asBytes(v)) }

// DownloadHost copies n elements from host memory from AllocHost into a
// new slice: how a process that does not own that memory reads it.
func DownloadHost[T Element](d Device, src HostPtr, n int) ([]T, error) {
	if n < 0 {
		return nil, fmt.Errorf("gpu: read host %d elements", n)
	}
	v := make([]T, n)
	return v, d.ReadHost(asBytes(v), src)
}

// Download copies n elements from device memory at src into a new slice.
func Download[T Element](d Device, src DevicePtr, n int) ([]T, error) {
	if n < 0 {
		return nil, fmt.Errorf("gpu: download %d elements", n)
	}
	v := make([]T, n)
	return v, d.Read(asBytes(v), src)
}
