// Package nccl runs NCCL's collectives (all-reduce, all-gather,
// reduce-scatter) across the GPUs of one worker, as one gpu.Op that spans
// them all:
//
//	c := nccl.Collective{Kind: nccl.AllReduce, Devices: 2,
//		Send: []gpu.DevicePtr{x0, x1}, Recv: []gpu.DevicePtr{y0, y1}, Count: n}
//	res, err := gpu.RunMulti(dev, gpu.Multi{Devices: 2, Reps: 10,
//		Steps: []gpu.DevOp{{Device: -1, Op: c}}})
//	busbw := float64(nccl.AlgBytes(c.Kind, 2, n)) / res.Times[0].Seconds() * nccl.BusFactor(c.Kind, 2)
//
// NCCL (libnccl.so.2) is loaded at run time, never linked: from
// $CUDAREPL_NCCL where it is set (then that file alone), else from the
// loader's path, else from where pip's nvidia-nccl-cu13 (or -cu12) wheel
// put it (site-packages/nvidia/nccl/lib, in $VIRTUAL_ENV, /opt/*/.venv and
// the system's Python folders). NVIDIA builds NCCL for Linux only: on
// Windows and macOS Version says so. NVLink multicast (NVLS) is kept off:
// the package sets NCCL_NVLS_ENABLE=0 before NCCL can read it.
//
// The package follows NCCL's single-thread model: one thread (GPU 0's
// GPU thread in the worker) makes the communicators of GPUs 0..n-1 with
// ncclCommInitAll and enqueues every rank's call inside one
// ncclGroupStart/ncclGroupEnd. The communicators are state of GPU 0's
// context, made on the first collective, made again when the number of
// GPUs changes, and destroyed with the context. It moves float32 and
// reduces with a sum, nothing else; it does not do point-to-point
// send/receive, several processes or several hosts.
//
// BusFactor and AlgBytes turn a collective's time into the algorithm and
// bus bandwidths that nccl-tests reports, so that a lesson's numbers read
// as nccl-tests' do.
//
// # Type Conversions
//
//	ncclComm_t     ⇔ uintptr, kept by the package
//	cudaStream_t   ⇔ uintptr, from gpu.Exec.DeviceStream
//	void* buffers  ⇔ gpu.DevicePtr
//	size_t count   ⇔ Collective.Count (int64 ≥ 1)
//	ncclResult_t   ⇔ error (*gpu.CUDAError, Name "ncclInvalidArgument", …)
//	ncclDataType_t ⇔ always ncclFloat32 (7)
//	ncclRedOp_t    ⇔ always ncclSum (0)
//
// The package registers Collective with gpu.RegisterLibrary from its init,
// so a program whose worker runs collectives imports it, as package worker
// does.
package nccl
