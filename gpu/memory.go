package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
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

// MemInfo returns the free and total device memory in bytes
// (cuMemGetInfo_v2). Under a budget (share.MemLimitEnv) the device looks
// as large as the budget, and what is left of it is free where the device
// has that much free.
func (c *Context) MemInfo() (free, total int64, err error) {
	b, err := processBudget()
	if err != nil {
		return 0, 0, err
	}
	err = c.do(func() error {
		var f, t uint64
		err := c.d.check(c.d.cuMemGetInfo(&f, &t), "cuMemGetInfo_v2", "")
		free, total = b.View(int64(f), int64(t), c.allocated())
		return err
	})
	return free, total, err
}

// Alloc allocates bytes of device memory (cuMemAlloc_v2). Past the
// process's budget (share.MemLimitEnv) it returns a *BudgetError and
// allocates nothing.
func (c *Context) Alloc(bytes int64) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("gpu: alloc %d bytes: size must be positive", bytes)
	}
	var p uint64
	err := c.do(func() error {
		if err := c.admit(bytes, "alloc"); err != nil {
			return err
		}
		if err := c.d.check(c.d.cuMemAlloc(&p, uint64(bytes)), "cuMemAlloc_v2", fmt.Sprintf("%d bytes", bytes)); err != nil {
			return err
		}
		c.allocs[DevicePtr(p)] = bytes
		return nil
	})
	return DevicePtr(p), err
}

// Free releases memory from Alloc (cuMemFree_v2).
func (c *Context) Free(p DevicePtr) error {
	return c.do(func() error {
		return c.free(p)
	})
}

// free releases an allocation and marks every graph that uses it; on the
// GPU thread.
func (c *Context) free(p DevicePtr) error {
	if err := c.d.check(c.d.cuMemFree(uint64(p)), "cuMemFree_v2", fmt.Sprintf("%#x", uint64(p))); err != nil {
		return err
	}
	delete(c.allocs, p)
	for _, g := range c.graphs {
		if g.freed == 0 && slices.Contains(g.uses, p) {
			g.freed = p // its kernels would now read or write whatever is allocated there next
		}
	}
	return nil
}

// Write copies src to device memory at dst.
func (c *Context) Write(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return c.do(func() error {
		var pin runtime.Pinner
		defer pin.Unpin()
		pin.Pin(&src[0])
		err := c.d.check(c.d.cuMemcpyHtoDAsync(uint64(dst), uintptr(unsafe.Pointer(&src[0])), uint64(len(src)), c.stream),
			"cuMemcpyHtoDAsync_v2", fmt.Sprintf("%d bytes", len(src)))
		return errors.Join(err, c.sync("after a write"))
	})
}

// Read copies device memory at src into dst.
func (c *Context) Read(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return c.do(func() error {
		var pin runtime.Pinner
		defer pin.Unpin()
		pin.Pin(&dst[0])
		err := c.d.check(c.d.cuMemcpyDtoHAsync(uintptr(unsafe.Pointer(&dst[0])), uint64(src), uint64(len(dst)), c.stream),
			"cuMemcpyDtoHAsync_v2", fmt.Sprintf("%d bytes", len(dst)))
		if err != nil {
			return err
		}
		return c.sync("after a read")
	})
}

// sync waits for the stream; on the GPU thread.
func (c *Context) sync(detail string) error {
	return c.d.check(c.d.cuStreamSynchronize(c.stream), "cuStreamSynchronize", detail)
}

// AllocHost allocates host memory, page-locked when pinned.
func (c *Context) AllocHost(bytes int64, pinned bool) (HostPtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("gpu: alloc host %d bytes: size must be positive", bytes)
	}
	var p HostPtr
	err := c.do(func() error {
		if pinned {
			// Portable: pinned for every GPU's context in the worker, not
			// only this one's, so that another GPU copies from it directly.
			const portable = 0x01 // CU_MEMHOSTALLOC_PORTABLE
			var h unsafe.Pointer
			if err := c.d.check(c.d.cuMemHostAlloc(&h, uint64(bytes), portable), "cuMemHostAlloc", fmt.Sprintf("%d bytes", bytes)); err != nil {
				return err
			}
			p = HostPtr(uintptr(h))
			c.host[p] = hostAlloc{pinned: true, mem: unsafe.Slice((*byte)(h), bytes)}
			return nil
		}
		// Pageable memory outside the Go heap, so its address never moves.
		mem, err := mapHost(int(bytes))
		if err != nil {
			return fmt.Errorf("gpu: alloc host %d bytes: %w", bytes, err)
		}
		p = HostPtr(uintptr(unsafe.Pointer(&mem[0])))
		c.host[p] = hostAlloc{mem: mem}
		return nil
	})
	return p, err
}

// FreeHost releases memory from AllocHost.
func (c *Context) FreeHost(p HostPtr) error {
	return c.do(func() error {
		h, ok := c.host[p]
		if !ok {
			return fmt.Errorf("gpu: free host %#x: not memory from AllocHost", uint64(p))
		}
		return c.freeHost(p, h)
	})
}

func (c *Context) freeHost(p HostPtr, h hostAlloc) error {
	delete(c.host, p)
	if h.pinned {
		return c.d.check(c.d.cuMemFreeHost(unsafe.Pointer(&h.mem[0])), "cuMemFreeHost", "")
	}
	return unmapHost(h.mem)
}

// hostSlice returns n bytes of host memory at p+off, checked against its allocation.
func (c *Context) hostSlice(p HostPtr, n int) ([]byte, error) {
	for base, h := range c.host {
		if off := uint64(p - base); p >= base && off+uint64(n) <= uint64(len(h.mem)) {
			return h.mem[off : off+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("gpu: host memory %#x (+%d bytes) is not inside memory from AllocHost", uint64(p), n)
}

// WriteHost copies src into host memory from AllocHost.
func (c *Context) WriteHost(dst HostPtr, src []byte) error {
	return c.do(func() error {
		b, err := c.hostSlice(dst, len(src))
		if err == nil {
			copy(b, src)
		}
		return err
	})
}

// ReadHost copies host memory from AllocHost into dst.
func (c *Context) ReadHost(dst []byte, src HostPtr) error {
	return c.do(func() error {
		b, err := c.hostSlice(src, len(dst))
		if err == nil {
			copy(dst, b)
		}
		return err
	})
}

// The worker's side of memory: each call runs itself on the worker's
// Device.

// memInfo is MemInfo's answer.
type memInfo struct{ Free, Total int64 }

type memInfoCall struct{}

func (memInfoCall) serve(dev Device, _ func(int, int)) (any, error) {
	free, total, err := dev.MemInfo()
	return memInfo{free, total}, err
}

type allocCall struct{ Bytes int64 }

func (c allocCall) serve(dev Device, _ func(int, int)) (any, error) { return dev.Alloc(c.Bytes) }

type freeCall struct{ Ptr DevicePtr }

func (c freeCall) serve(dev Device, _ func(int, int)) (any, error) { return nil, dev.Free(c.Ptr) }

type writeCall struct {
	Dst  DevicePtr
	Data []byte
}

func (c writeCall) serve(dev Device, _ func(int, int)) (any, error) {
	return nil, dev.Write(c.Dst, c.Data)
}

type readCall struct {
	Src   DevicePtr
	Bytes int
}

func (c readCall) serve(dev Device, _ func(int, int)) (any, error) {
	b := make([]byte, c.Bytes)
	return b, dev.Read(b, c.Src)
}

type allocHostCall struct {
	Bytes  int64
	Pinned bool
}

func (c allocHostCall) serve(dev Device, _ func(int, int)) (any, error) {
	return dev.AllocHost(c.Bytes, c.Pinned)
}

type freeHostCall struct{ Ptr HostPtr }

func (c freeHostCall) serve(dev Device, _ func(int, int)) (any, error) {
	return nil, dev.FreeHost(c.Ptr)
}

type writeHostCall struct {
	Dst  HostPtr
	Data []byte
}

func (c writeHostCall) serve(dev Device, _ func(int, int)) (any, error) {
	return nil, dev.WriteHost(c.Dst, c.Data)
}

type readHostCall struct {
	Src   HostPtr
	Bytes int
}

func (c readHostCall) serve(dev Device, _ func(int, int)) (any, error) {
	b := make([]byte, c.Bytes)
	return b, dev.ReadHost(b, c.Src)
}

// MemInfo returns the free and total device memory in bytes.
func (w *Worker) MemInfo() (free, total int64, err error) {
	m, err := answer[memInfo](w.do("meminfo", memInfoCall{}))
	return m.Free, m.Total, err
}

// Alloc allocates bytes of device memory.
func (w *Worker) Alloc(bytes int64) (DevicePtr, error) {
	return answer[DevicePtr](w.doOwning("device", fmt.Sprintf("alloc %d bytes", bytes), allocCall{bytes}))
}

// Free releases memory from Alloc. Memory of a worker that has since been
// replaced went with it: freeing it does nothing.
func (w *Worker) Free(p DevicePtr) error {
	_, err := w.doFreeing("device", uint64(p), "free", freeCall{p})
	return err
}

// pipePiece is the most bytes one call carries through the worker's pipe:
// a larger transfer goes as several calls, each within the time limit on
// its own, so that reading a gigabyte back is not taken for a hang.
const pipePiece = 64 << 20

// inPieces calls f on [from, to) pieces of n bytes, pipePiece at most
// each, in order, until one fails; once, on [0, 0), when n is 0.
func inPieces(n int, f func(from, to int) error) error {
	for from := 0; from < n || from == 0; from += pipePiece {
		if err := f(from, min(from+pipePiece, n)); err != nil || n == 0 {
			return err
		}
	}
	return nil
}

// Write copies src to device memory at dst.
func (w *Worker) Write(dst DevicePtr, src []byte) error {
	return inPieces(len(src), func(from, to int) error {
		_, err := w.do(fmt.Sprintf("write %d bytes", to-from), writeCall{dst + DevicePtr(from), src[from:to]})
		return err
	})
}

// Read copies device memory at src into dst.
func (w *Worker) Read(dst []byte, src DevicePtr) error {
	return inPieces(len(dst), func(from, to int) error {
		b, err := answer[[]byte](w.do(fmt.Sprintf("read %d bytes", to-from), readCall{src + DevicePtr(from), to - from}))
		copy(dst[from:to], b)
		return err
	})
}

// AllocHost allocates host memory in the worker, page-locked when pinned.
func (w *Worker) AllocHost(bytes int64, pinned bool) (HostPtr, error) {
	return answer[HostPtr](w.doOwning("host", fmt.Sprintf("alloc host %d bytes", bytes), allocHostCall{bytes, pinned}))
}

// FreeHost releases memory from AllocHost; like Free, it does nothing for
// memory of a worker since replaced.
func (w *Worker) FreeHost(p HostPtr) error {
	_, err := w.doFreeing("host", uint64(p), "free host", freeHostCall{p})
	return err
}

// WriteHost copies src into the worker's host memory at dst.
func (w *Worker) WriteHost(dst HostPtr, src []byte) error {
	return inPieces(len(src), func(from, to int) error {
		_, err := w.do("write host", writeHostCall{dst + HostPtr(from), src[from:to]})
		return err
	})
}

// ReadHost copies the worker's host memory at src into dst.
func (w *Worker) ReadHost(dst []byte, src HostPtr) error {
	return inPieces(len(dst), func(from, to int) error {
		b, err := answer[[]byte](w.do("read host", readHostCall{src + HostPtr(from), to - from}))
		copy(dst[from:to], b)
		return err
	})
}

func init() {
	for _, v := range []any{memInfoCall{}, allocCall{}, freeCall{}, writeCall{}, readCall{}, allocHostCall{}, freeHostCall{},
		writeHostCall{}, readHostCall{}, memInfo{}, DevicePtr(0), HostPtr(0)} {
		registerType(v)
	}
}
