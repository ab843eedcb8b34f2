package gpu

import (
	"cudarepl/nvrtc"
)

// Device is one GPU's context: memory, kernels, launches, graphs and timed
// measurements. *Worker (the default, from Open) forwards each call to a
// worker process; *Context (from OpenInProcess) makes the calls itself.
// A Device is safe for use by several goroutines; calls run one at a time.
//
// Each method has its three sides in one file, by topic (memory.go,
// kernel.go, run.go, harness.go, library.go): the Context that makes the
// calls, the call type that carries it to the worker and runs it there,
// and the Worker method that sends it. A new method is one more of each,
// and its line here.
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
	// Call runs a library's request in the process that owns the context
	// and returns its answer.
	Call(r Request) (any, error)

	// Close releases the context (and stops the worker).
	Close() error
}
