// Package worker makes a program its own GPU worker: import it for its
// effect from every main package, and every test binary, that opens a
// gpu.Device with gpu.Open.
//
//	import _ "cudarepl/worker"
//
// gpu.Open starts the running executable again as a child process that
// owns the CUDA context, so that a kernel's fault cannot end the program.
// That child must know every library whose work it may be sent: this
// package imports each one (cuBLAS through package blas, cuDNN through
// package cudnnx), whose init registers it with gpu.RegisterLibrary, and
// then, from its own init, calls gpu.ServeWorker, which in the child
// serves until the parent goes away. A new library package is imported
// here, and nowhere else needs to change. It imports package gpu/remote
// too, whose init registers the transport that $CUDAREPL_REMOTE or
// $CUDAREPL_WORKER_CMD names, so that gpu.Open sends the workers there.
package worker

import (
	_ "cudarepl/blas"
	_ "cudarepl/cudnnx"
	"cudarepl/gpu"
	_ "cudarepl/gpu/remote"
	_ "cudarepl/nccl"
)

func init() { gpu.ServeWorker() }
