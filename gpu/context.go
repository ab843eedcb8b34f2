package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"cudarepl/gpu/share"
	"cudarepl/nvml"
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
	dev       int32
	stream    uintptr
	modules   map[string]uintptr    // image key → CUmodule
	kernels   map[kernelKey]uintptr // → CUfunction
	maxDyn    map[uintptr]int       // dynamic shared memory a kernel was opened up to
	host      map[HostPtr]hostAlloc
	graphs    map[uint64]*graphRec // by its CUgraphExec
	allocs    map[DevicePtr]int64  // live cuMemAlloc allocations and their sizes, to know what a graph uses
	slots     map[int]DevicePtr    // AllocSlot's allocations, by slot
	streams   map[int]uintptr      // OnStream's further streams, by number
	events    map[int]uintptr      // Record's and WaitFor's events, by number
	afterCall []func()             // what Exec.AfterCall deferred to the end of the call
	libState  map[any]any          // a library's state, by its key (Exec.State)
	flush     *l2Flush             // Bench's L2 flush, made on first use
	nvml      *nvml.Device         // this GPU in NVML, for Bench's conditions; nil until opened, or where NVML cannot be read
	nvmlErr   error                // why NVML cannot be read
	poison    error                // the sticky fault that made the context unusable
	turns     share.Lock           // Bench's turns on this GPU with other processes'

	peerState // which GPU, and the other GPUs' contexts (peer.go)
}

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
	c := newContext(d)
	ready := make(chan error, 1)
	go c.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return c, nil
}

// newContext is a context not yet started, for GPU 0 until told otherwise.
func newContext(d *driverAPI) *Context {
	return &Context{
		d: d, calls: make(chan func()), done: make(chan struct{}),
		modules: map[string]uintptr{}, kernels: map[kernelKey]uintptr{}, maxDyn: map[uintptr]int{},
		host: map[HostPtr]hostAlloc{}, graphs: map[uint64]*graphRec{}, allocs: map[DevicePtr]int64{}, slots: map[int]DevicePtr{}, streams: map[int]uintptr{}, events: map[int]uintptr{}, libState: map[any]any{},
	}
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

// start initializes the driver and makes the primary context current;
// for a peer, startPeer.
func (c *Context) start() error {
	if c.root != nil {
		return c.startPeer()
	}
	d := c.d
	// Loading the registered libraries to read their versions takes about
	// as long as the driver's start; both go on at once. NVRTC loads after
	// cuInit, on this thread: its loading saves and restores every signal
	// handler of the process (dl.KeepSignalHandlers), which must not undo
	// one that the driver, or a sanitizer's hooks in it, installs meanwhile.
	libs := make(chan map[string]string, 1)
	go func() { libs <- installedVersions() }()
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
	if err := d.check(d.cuDevicePrimaryCtxRetain(&c.pctx, c.dev), "cuDevicePrimaryCtxRetain", ""); err != nil {
		return noGPUError(d, err)
	}
	if err := d.check(d.cuCtxSetCurrent(c.pctx), "cuCtxSetCurrent", ""); err != nil {
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
	info.Libraries = <-libs
	info.Devices = int(n)
	info.PeerAccess = d.peersReached(c.dev, int(n))
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
	if c.flush != nil {
		c.flush.release(d)
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
	c.calls <- func() {
		err := f()
		for _, g := range c.afterCall {
			g()
		}
		c.afterCall = nil
		c.letGo(err)
		errc <- err
	}
	err := <-errc
	var ce *CUDAError
	if errors.As(err, &ce) && ce.Sticky() {
		c.poison = err
	}
	return err
}

// Close releases the context, and the other GPUs' contexts opened from
// it (On); calls after Close return an error. Closing another GPU's
// context does nothing: it closes with GPU 0's.
func (c *Context) Close() error {
	if c.root != nil {
		return nil
	}
	c.shutdown()
	c.closePeers()
	return nil
}

// shutdown ends the GPU thread, which releases what the context holds.
func (c *Context) shutdown() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.calls)
	c.mu.Unlock()
	<-c.done
}

// Info describes the GPU.
func (c *Context) Info() DeviceInfo { return c.info }
