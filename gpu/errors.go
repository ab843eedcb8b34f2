package gpu

import (
	"errors"
	"fmt"
	"strings"

	"cudarepl/internal/dl"
)

// ErrNoGPU is wrapped by every error that means live GPU work is impossible
// here: no driver, no device, or a library that is missing. Callers test for
// it with errors.Is and fall back to replay. It is dl.ErrUnavailable, which
// every package that loads an NVIDIA library wraps.
var ErrNoGPU = dl.ErrUnavailable

// UnavailableError says in one sentence why a library or the GPU cannot be
// used, e.g. "no NVIDIA driver found (libcuda.so.1)".
type UnavailableError = dl.UnavailableError

// CUDAError is a failed call into the driver or a library of its stack
// (cuBLAS, cuDNN: their packages make CUDAErrors of their statuses).
type CUDAError struct {
	Call   string // the C symbol, e.g. "cuLaunchKernel"
	Detail string // what it was doing, e.g. "vadd (grid 4x1x1, block 256x1x1)"
	Code   int    // the status value
	Name   string // e.g. "CUDA_ERROR_ILLEGAL_ADDRESS"
	Msg    string // the library's description, if it has one
}

func (e *CUDAError) Error() string {
	var b strings.Builder
	b.WriteString("gpu: ")
	b.WriteString(e.Call)
	if e.Detail != "" {
		b.WriteString(" ")
		b.WriteString(e.Detail)
	}
	b.WriteString(": ")
	b.WriteString(e.Name)
	if e.Msg != "" && e.Msg != e.Name {
		b.WriteString(" (")
		b.WriteString(e.Msg)
		b.WriteString(")")
	}
	return b.String()
}

// Sticky reports whether the error leaves the CUDA context unusable, as a
// kernel fault does: every later call in that process fails the same way.
func (e *CUDAError) Sticky() bool {
	if !strings.HasPrefix(e.Name, "CUDA_ERROR_") {
		return false
	}
	switch e.Code {
	case 700, // ILLEGAL_ADDRESS
		702, // LAUNCH_TIMEOUT
		710, // ASSERT
		714, // HARDWARE_STACK_ERROR
		715, // ILLEGAL_INSTRUCTION
		716, // MISALIGNED_ADDRESS
		717, // INVALID_ADDRESS_SPACE
		718, // INVALID_PC
		719: // LAUNCH_FAILED
		return true
	}
	return false
}

// WorkerError reports that the worker process running device work failed:
// it faulted, ran past its time limit, or died. A fresh worker has been
// started by the time the caller sees it, and everything allocated in the old
// one is gone.
type WorkerError struct {
	Op       string // what was running, e.g. "launch vadd_oob"
	Cause    string // e.g. "ran past the 10s time limit"
	Err      error  // the device error that caused it, if any
	TimedOut bool   // the call ran past the time limit (rather than faulting or dying)
}

func (e *WorkerError) Error() string {
	return fmt.Sprintf("gpu: %s %s; a fresh worker was started (device memory and graphs from before are gone)", e.Op, e.Cause)
}

// Unwrap returns the device error behind the failure, if any.
func (e *WorkerError) Unwrap() error { return e.Err }

// IsOutOfMemory reports whether err is an allocation the device could not
// satisfy: CUDA_ERROR_OUT_OF_MEMORY, or a library's status whose name says
// an allocation failed (CUBLAS_STATUS_ALLOC_FAILED, CUDNN_STATUS_ALLOC_FAILED).
func IsOutOfMemory(err error) bool {
	var ce *CUDAError
	if !errors.As(err, &ce) {
		return false
	}
	return ce.Name == "CUDA_ERROR_OUT_OF_MEMORY" || !strings.HasPrefix(ce.Name, "CUDA_") && strings.Contains(ce.Name, "ALLOC")
}
