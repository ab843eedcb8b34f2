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
package kernels
