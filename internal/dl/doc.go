// Package dl opens the NVIDIA libraries at run time, without cgo: dlopen
// through github.com/ebitengine/purego, binding C symbols to Go function
// variables, and the one sentence that says why a library is missing
// ([UnavailableError]).
//
// It is the floor every package that talks to an NVIDIA library stands on
// (gpu for the driver, nvrtc, blas, cudnnx); it knows no library by name.
// $CUDAREPL_HIDE ([HideEnv]) makes it treat an installed library as
// missing, so a machine without one can be tried on a machine with it.
package dl
