// Package dl opens the NVIDIA libraries at run time, without cgo: dlopen
// through github.com/ebitengine/purego on Linux (LoadLibrary and
// GetProcAddress on Windows), binding C symbols to Go function variables,
// and the one sentence that says why a library is missing
// ([UnavailableError]).
//
// It is the floor every package that talks to an NVIDIA library stands on
// (gpu for the driver, nvrtc, blas, cudnnx); it knows no library by name.
// A caller names a library's files for every system at once
// ("libcuda.so.1", "nvcuda.dll"), and [Open] tries this system's. macOS has
// no CUDA: there Open tries nothing, and says so.
// $CUDAREPL_HIDE ([HideEnv]) makes it treat an installed library as
// missing, so a machine without one can be tried on a machine with it.
package dl
