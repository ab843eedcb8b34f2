// Package kernels holds the course's CUDA C sources, embedded in the binary.
//
// Each operation has one file, its versions side by side, simplest first,
// as llm.c's dev/cuda does: vector_add.cu holds vadd_v1 … vadd_v3. A
// version is declared by the one-line comment right above its kernel,
//
//	// v2: a grid-stride loop; ...
//	extern "C" __global__ void vadd_v2(...)
//
// and Ladder reads the list of versions from those lines, so it is never
// kept by hand. Kernels are extern "C", so they are found by their names.
//
// Device helpers that several files use (fp16 conversions, smem32,
// mma16816, Hopper's mbarriers, TMA loads and wgmma descriptors) are
// written once, in the course header cudarepl.cuh, as llm.c's dev/cuda
// keeps them in common.h. A file says #include "cudarepl.cuh", and Source
// hands NVRTC the header by that name (nvrtc.Source's Headers), so no CUDA
// toolkit is needed to compile it; a helper only one file uses stays in
// that file.
package kernels
