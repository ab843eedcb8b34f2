// Package blas runs matrix products through cuBLAS and cuBLASLt, loaded
// at run time (libcublas.so.13, .12 or .11, and libcublasLt), as gpu.Ops:
// a GEMM enqueues like a kernel launch, is timed by gpu.Device.Bench, and
// is captured into graphs.
//
//	dev.Run(blas.GEMM{M: m, N: n, K: k, A: a, B: b, C: c, Type: gpu.FP16, Alpha: 1})
//
// Every matrix is row-major, as in Go; the mapping onto cuBLAS's
// column-major order happens here. cuBLASLt serves the FP8 products (with
// its fast accumulation where GEMM.FastAccum asks for it) and the tuned
// ones (GEMM.Tuned: the fastest of the heuristics' algorithms, timed once
// per shape and context).
//
// The package registers GEMM with gpu.RegisterLibrary from its init, so a
// program whose worker runs products imports it, as package worker does.
// Handles, workspace and tuned algorithms live in the process that owns
// the CUDA context, as state of its gpu.Exec.
package blas
