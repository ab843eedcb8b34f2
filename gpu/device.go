package gpu

import (
	"time"

	"cudarepl/nvrtc"
)

// Device is one GPU's context: memory, kernels, launches, graphs and timed
// measurements. *Worker (the default, from Open) forwards each call to a
// worker process; *Context (from OpenInProcess) makes the calls itself.
// A Device is safe for use by several goroutines; calls run one at a time.
type Device interface {
	// Info describes the GPU.
	Info() DeviceInfo
	// MemInfo returns the free and total device memory in bytes.
	MemInfo() (free, total int64, err error)

	// Alloc allocates bytes of device memory (cuMemAlloc_v2).
	Alloc(bytes int64) (DevicePtr, error)
	// Free releases memory from Alloc (cuMemFree_v2).
	Free(p DevicePtr) error
	// Write copies src to device memory at dst (cuMemcpyHtoD_v2).
	Write(dst DevicePtr, src []byte) error
	// Read copies device memory at src into dst (cuMemcpyDtoH_v2).
	Read(dst []byte, src DevicePtr) error

	// AllocHost allocates host memory in the process that owns the context:
	// page-locked (cuMemHostAlloc) when pinned, ordinary pageable memory
	// otherwise. Copy ops move data between it and device memory.
	AllocHost(bytes int64, pinned bool) (HostPtr, error)
	// FreeHost releases memory from AllocHost.
	FreeHost(p HostPtr) error
	// WriteHost copies src into host memory from AllocHost.
	WriteHost(dst HostPtr, src []byte) error
	// ReadHost copies host memory from AllocHost into dst.
	ReadHost(dst []byte, src HostPtr) error

	// LoadKernel loads img (once per image) and returns its kernel name
	// (cuModuleLoadData, cuModuleGetFunction, cuFuncGetAttribute).
	LoadKernel(img *nvrtc.Image, name string) (Kernel, error)
	// Occupancy returns how many blocks of k fit on one SM at the given
	// block size and dynamic shared memory
	// (cuOccupancyMaxActiveBlocksPerMultiprocessor).
	Occupancy(k Kernel, block, dynShared int) (int, error)

	// Launch runs one kernel and waits for it, so that a fault is reported
	// against the kernel that caused it (cuLaunchKernel).
	Launch(l Launch) error
	// Run enqueues ops on the device's stream in order and waits for them.
	Run(ops ...Op) error
	// Capture records ops into a CUDA graph, ready to replay with GraphOp
	// (cuStreamBeginCapture_v2, cuGraphInstantiateWithFlags).
	Capture(ops ...Op) (Graph, error)
	// Update records ops into a new graph and updates g's instantiated
	// graph to it in place (cuGraphExecUpdate_v2), which costs less than
	// Capture when only arguments or launch shapes changed. The ops must
	// have g's shape: as many, of the same kinds, in order.
	Update(g Graph, ops ...Op) (Graph, error)
	// FreeGraph releases a graph from Capture.
	FreeGraph(g Graph) error
	// MemPool sets the release threshold of the device's default
	// stream-ordered pool (what AllocSlot with Pool allocates from) to
	// keep bytes when keep ≥ 0, and reports what the pool holds. Below the
	// threshold the pool keeps freed memory for the next allocation; above
	// it, it gives memory back at each synchronisation.
	MemPool(keep int64) (PoolStats, error)
	// Timeline runs ops once, each on its stream (OnStream), and returns
	// when each started and ended from CUDA events recorded around it,
	// after waiting for every stream it used.
	Timeline(ops ...Op) ([]Span, error)
	// Bench times b inside the process that owns the context.
	Bench(b Bench) (Timing, error)
	// CallLibrary sends data to the Library registered as name, in the
	// process that owns the context, and returns its answer.
	CallLibrary(name string, data []byte) ([]byte, error)

	// Close releases the context (and stops the worker).
	Close() error
}

// Kernel names a kernel of a loaded image. It is a plain value: a Worker
// reloads the image by itself after a restart.
type Kernel struct {
	Name  string
	Image string // the Image's Key
	Attrs KernelAttrs
}

// KernelAttrs is what the driver reports for a loaded kernel
// (cuFuncGetAttribute).
type KernelAttrs struct {
	MaxThreadsPerBlock int   // the most threads a block of it can have
	Registers          int   // per thread
	SharedStatic       int64 // bytes
	Local              int64 // bytes of local memory per thread (spills, stack)
	Const              int64 // bytes
	PTXVersion         int   // e.g. 90
	BinaryVersion      int   // e.g. 90
}

// Launch is one kernel launch: a grid of blocks of threads.
type Launch struct {
	Kernel Kernel
	Grid   Dim3
	Block  Dim3
	Shared int // dynamic shared memory per block, bytes
	Args   []Arg
}

func (l Launch) String() string {
	return l.Kernel.Name + " (grid " + l.Grid.String() + ", block " + l.Block.String() + ")"
}

// Graph is a captured, instantiated CUDA graph (CUgraphExec).
type Graph struct {
	ID    uint64
	Ops   int           // how many ops were captured
	Built time.Duration // what capturing and instantiating (or updating) it took, in the process that owns the context
}

// PoolStats is what the device's default stream-ordered memory pool holds.
type PoolStats struct {
	Reserved int64 // bytes the pool holds from the device
	Used     int64 // of them, bytes allocated and not yet freed
}
