package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"cudarepl/nvrtc"
)

// Context is a Device driven from this process: one GPU's primary context,
// owned by one locked OS thread that makes every CUDA call, and one stream
// that all work goes through. A kernel fault leaves it unusable (CUDA's
// rule, not ours); use a Worker where that must not end the program.
type Context struct {
	d     *driverAPI
	info  DeviceInfo
	calls chan func()
	done  chan struct{}

	mu     sync.Mutex // guards closed
	closed bool

	// Owned by the GPU thread.
	dev      int32
	stream   uintptr
	modules  map[string]uintptr    // image key → CUmodule
	kernels  map[kernelKey]uintptr // → CUfunction
	maxDyn   map[uintptr]int       // dynamic shared memory a kernel was opened up to
	host     map[HostPtr]hostAlloc
	graphs   map[uint64]*graphRec // by its CUgraphExec
	allocs   map[DevicePtr]int64  // live cuMemAlloc allocations and their sizes, to know what a graph uses
	slots    map[int]DevicePtr    // AllocSlot's allocations, by slot
	streams  map[int]uintptr      // OnStream's further streams, by number
	events   map[int]uintptr      // Record's and WaitFor's events, by number
	blas     *blasHandle
	lt       *ltHandle
	libState map[string]any    // per Library, see LibContext.State
	ltTuned  map[string]ltAlgo // cuBLASLt algorithm chosen per GEMM shape
	flushBuf DevicePtr
	poison   error // the sticky fault that made the context unusable
}

type kernelKey struct{ image, name string }

type hostAlloc struct {
	pinned bool
	mem    []byte // the whole allocation
}

// OpenInProcess opens GPU 0 in this process. Without a driver or a GPU it
// returns an *UnavailableError, which wraps ErrNoGPU.
func OpenInProcess() (*Context, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	c := &Context{
		d: d, calls: make(chan func()), done: make(chan struct{}),
		modules: map[string]uintptr{}, kernels: map[kernelKey]uintptr{}, maxDyn: map[uintptr]int{},
		host: map[HostPtr]hostAlloc{}, graphs: map[uint64]*graphRec{}, allocs: map[DevicePtr]int64{}, slots: map[int]DevicePtr{}, streams: map[int]uintptr{}, events: map[int]uintptr{}, libState: map[string]any{}, ltTuned: map[string]ltAlgo{},
	}
	ready := make(chan error, 1)
	go c.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return c, nil
}

// loop is the GPU thread. It never unlocks the OS thread, so the thread
// (and the context current on it) goes away with the goroutine at Close.
func (c *Context) loop(ready chan<- error) {
	runtime.LockOSThread()
	defer close(c.done)
	if err := c.start(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range c.calls {
		f()
	}
	c.release()
}

// start initializes the driver and makes the primary context current.
func (c *Context) start() error {
	d := c.d
	if r := d.cuInit(0); r != 0 {
		return noGPUError(d, d.check(r, "cuInit", ""))
	}
	var n int32
	if err := d.check(d.cuDeviceGetCount(&n), "cuDeviceGetCount", ""); err != nil {
		return noGPUError(d, err)
	}
	if n == 0 {
		return noGPUError(d, &CUDAError{Call: "cuDeviceGetCount", Code: 100, Name: "CUDA_ERROR_NO_DEVICE"})
	}
	if err := d.check(d.cuDeviceGet(&c.dev, 0), "cuDeviceGet", "0"); err != nil {
		return err
	}
	var pctx uintptr
	if err := d.check(d.cuDevicePrimaryCtxRetain(&pctx, c.dev), "cuDevicePrimaryCtxRetain", ""); err != nil {
		return noGPUError(d, err)
	}
	if err := d.check(d.cuCtxSetCurrent(pctx), "cuCtxSetCurrent", ""); err != nil {
		return err
	}
	// A blocking stream (flags 0) also orders itself after the legacy
	// default stream, which libraries may use behind our back.
	if err := d.check(d.cuStreamCreate(&c.stream, 0), "cuStreamCreate", ""); err != nil {
		return err
	}
	info, err := d.queryDevice(c.dev)
	if err != nil {
		return err
	}
	if v, err := nvrtc.Version(); err == nil {
		info.NVRTCVersion = v
	}
	if b, err := loadCUBLAS(); err == nil {
		info.CUBLASVersion = b.version
	}
	c.info = info
	return nil
}

// noGPUError phrases a failed driver start as one sentence.
func noGPUError(d *driverAPI, err error) error {
	drv := "an NVIDIA driver"
	if v := kernelModuleVersion(); v != "" {
		drv = "NVIDIA driver " + v
	} else {
		var cv int32
		if d.cuDriverGetVersion(&cv) == 0 && cv > 0 {
			drv = "an NVIDIA driver for CUDA " + cudaVersionString(int(cv))
		}
	}
	return &UnavailableError{Reason: noGPUReason(drv, err), Err: err}
}

// noGPUReason says why driver drv gave no GPU, from the error it gave.
func noGPUReason(drv string, err error) string {
	var ce *CUDAError
	if errors.As(err, &ce) && (ce.Code == 100 || ce.Code == 101) {
		return fmt.Sprintf("%s found, but no GPU: %s", drv, ce.Name)
	}
	name := err.Error()
	if ce != nil {
		name = ce.Name
		if ce.Msg != "" && ce.Msg != ce.Name {
			name += " (" + ce.Msg + ")"
		}
	}
	return fmt.Sprintf("%s found, but it could not start: %s", drv, name)
}

// release frees everything the context holds; on the GPU thread.
func (c *Context) release() {
	d := c.d
	c.closeLibs()
	for exec, g := range c.graphs {
		d.cuGraphExecDestroy(uintptr(exec))
		d.cuGraphDestroy(g.graph)
	}
	for _, p := range c.slots {
		d.cuMemFree(uint64(p))
	}
	for _, e := range c.events {
		d.cuEventDestroy(e)
	}
	for _, s := range c.streams {
		d.cuStreamDestroy(s)
	}
	for p, h := range c.host {
		c.freeHost(p, h)
	}
	if c.blas != nil {
		c.blas.destroy()
	}
	if c.lt != nil {
		d.cuMemFree(c.lt.ws)
	}
	if c.flushBuf != 0 {
		d.cuMemFree(uint64(c.flushBuf))
	}
	for _, m := range c.modules {
		d.cuModuleUnload(m)
	}
	d.cuStreamDestroy(c.stream)
	d.cuDevicePrimaryCtxRelease(c.dev)
}

// do runs f on the GPU thread and returns its error. A sticky fault is
// remembered: every later call fails with it, as CUDA would.
func (c *Context) do(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("gpu: device is closed")
	}
	if c.poison != nil {
		return fmt.Errorf("gpu: the context is unusable after an earlier fault: %w", c.poison)
	}
	errc := make(chan error, 1)
	c.calls <- func() { errc <- f() }
	err := <-errc
	var ce *CUDAError
	if errors.As(err, &ce) && ce.Sticky() {
		c.poison = err
	}
	return err
}

// Close releases the context. Calls after Close return an error.
func (c *Context) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.calls)
	c.mu.Unlock()
	<-c.done
	return nil
}

// Info describes the GPU.
func (c *Context) Info() DeviceInfo { return c.info }

// MemInfo returns the free and total device memory in bytes (cuMemGetInfo_v2).
func (c *Context) MemInfo() (free, total int64, err error) {
	err = c.do(func() error {
		var f, t uint64
		err := c.d.check(c.d.cuMemGetInfo(&f, &t), "cuMemGetInfo_v2", "")
		free, total = int64(f), int64(t)
		return err
	})
	return free, total, err
}

// Alloc allocates bytes of device memory (cuMemAlloc_v2).
func (c *Context) Alloc(bytes int64) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("gpu: alloc %d bytes: size must be positive", bytes)
	}
	var p uint64
	err := c.do(func() error {
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
	})
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
			var h unsafe.Pointer
			if err := c.d.check(c.d.cuMemHostAlloc(&h, uint64(bytes), 0), "cuMemHostAlloc", fmt.Sprintf("%d bytes", bytes)); err != nil {
				return err
			}
			p = HostPtr(uintptr(h))
			c.host[p] = hostAlloc{pinned: true, mem: unsafe.Slice((*byte)(h), bytes)}
			return nil
		}
		// Pageable memory outside the Go heap, so its address never moves.
		mem, err := syscall.Mmap(-1, 0, int(bytes), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
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
	return syscall.Munmap(h.mem)
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
