package dl

import "errors"

// ErrUnavailable is wrapped by every error that means a library of the GPU
// stack cannot be used here: no driver, no device, or a library that is
// missing. Package gpu hands it on as gpu.ErrNoGPU, which callers test for
// with errors.Is to fall back to replay.
var ErrUnavailable = errors.New("no usable GPU")

// UnavailableError says in one sentence why a library or the GPU cannot be
// used, e.g. "no NVIDIA driver found (libcuda.so.1)".
type UnavailableError struct {
	Reason string // one sentence, lower case, no final period
	Err    error  // the underlying error, if any
}

// Error is the reason, after "gpu: ": a learner meets every missing part
// of the GPU stack (driver, NVRTC, cuBLAS, cuDNN) as one kind of problem.
func (e *UnavailableError) Error() string { return "gpu: " + e.Reason }

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
