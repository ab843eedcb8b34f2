// Package gpu runs device work on an NVIDIA GPU from Go without cgo: here,
// or in a worker process that owns the CUDA context.
//
// It loads the NVIDIA driver (libcuda.so.1) at run time with
// github.com/ebitengine/purego, so a binary built with CGO_ENABLED=0 on a
// machine without CUDA runs on any machine with a CUDA 11.8–13 driver. It
// never links CUDA at build time, and importing it never panics or exits:
// where no driver or no GPU is found, [Open] returns an error that says so in
// one sentence and wraps [ErrNoGPU].
//
// Device work runs in a worker: [Open] starts the running executable again as
// a child process whose only job is to own the CUDA context, and returns a
// [Device] that forwards each call to it. A kernel that writes out of bounds
// (which poisons a CUDA context for good), never finishes, or kills its
// process costs one error naming the kernel and the cause; the next call
// starts a fresh worker. Whole measurements ([Device.Bench]) run inside the
// worker, so the pipe between the processes never enters a timing.
// [OpenInProcess] gives the same [Device] without the worker, for programs
// that want the lowest overhead and accept that a fault ends them. A program
// that opens a worker imports package worker, which makes it able to serve
// as one ([ServeWorker]).
//
// The worker may run on another machine, the one with the GPU: [Options]
// Remote, a [Transport] (package gpu/remote: ssh, or any command that
// gives its pipe, as $CUDAREPL_REMOTE and $CUDAREPL_WORKER_CMD say),
// starts it there, where `cudarepl worker` serves it on stdin and stdout.
// A remote worker compiles kernels with that machine's NVRTC
// ([Worker.Compile]); a lost connection is a [ConnectionError], and the
// next command connects again. Timed regions take turns with other
// processes' on the same GPU, and allocations keep to a budget (package
// gpu/share).
//
// One worker drives every GPU of its machine. Its own context is GPU 0's;
// [On] gives GPU i as a [Device], whose context the worker opens on first
// use, with peer access to the others where the driver allows it
// ([DeviceInfo] PeerAccess). Work that spans GPUs is a [Multi] run by
// [RunMulti]: steps, each an [Op] on one GPU ([PeerCopy], [WaitPeer] for
// another GPU's event, or an op that spans every GPU itself, such as an
// NCCL collective), queued in order from one thread and timed by events on
// every GPU. Every worker runs with NVLink multicast off in NCCL
// (NCCL_NVLS_ENABLE=0, whatever the parent's environment says): a program
// that uses it can put a shared host's GPUs out of service. The GPUs are
// one machine's: the package does not span processes or hosts.
//
// What the package does not do: it does not compile a kernel for a local
// worker (package nvrtc does, into the [nvrtc.Image] that
// [Device.LoadKernel] takes; a remote worker calls nvrtc there), and it knows no
// vendor library or tool by name. cuBLAS (package blas) and cuDNN (package
// cudnnx) add their work as [Op]s and [Request]s that prepare themselves
// against an [Exec], and register their types with [RegisterLibrary] from
// their own init; compute-sanitizer (package gpu/sanitizer) is a [Wrapper]
// that the worker starts under.
//
// # Type Conversions
//
// The C types of the driver API map to Go as follows.
//
//	CUresult                               ⇔  error (*CUDAError)
//	CUdeviceptr                            ⇔  DevicePtr
//	void* host memory from cuMemHostAlloc  ⇔  HostPtr
//	CUfunction (with its module)           ⇔  Kernel
//	CUgraphExec                            ⇔  Graph
//	CUstream                               ⇔  uintptr (Exec.Stream)
//	dim3 grid, block                       ⇔  Dim3
//	kernel parameter (void**)              ⇔  []Arg (Int32, Uint32, Int64, Float32, Float64, Ptr, TMap)
//	cudaDataType                           ⇔  DType
//	float elapsed milliseconds (events)    ⇔  time.Duration
//
// Memory handed to C (kernel parameter arrays, host scalars, strings) is
// pinned with runtime.Pinner for the length of the call that reads it.
package gpu
