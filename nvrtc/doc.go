// Package nvrtc compiles CUDA C with NVRTC, loaded at run time
// (libnvrtc.so.13, .12 or .11.2), so it needs no GPU and no CUDA toolkit:
// [Compile] turns a [Source] into an [Image] of machine code for one
// architecture, with the PTX it was assembled from and what ptxas reported
// of each kernel's registers, shared memory and spills.
//
// Compiled images are cached on disk ($CUDAREPL_CACHE, else the user's
// cache folder), keyed by everything that went into the compile. Where a
// CUDA toolkit is installed, its include folder is given to NVRTC
// ([IncludeDirs]), so kernels may include cuda_fp16.h or mma.h.
//
// It loads kernels into no GPU: that is package gpu's job, which takes an
// [Image]. Every NVRTC call keeps the Go runtime's signal handlers, which
// LLVM inside NVRTC would otherwise replace.
package nvrtc
