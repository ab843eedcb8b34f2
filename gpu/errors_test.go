package gpu

import (
	"fmt"
	"testing"
)

func TestIsOutOfMemory(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&CUDAError{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}, true},
		{fmt.Errorf("bench: %w", &CUDAError{Call: "cublasCreate_v2", Code: 3, Name: "CUBLAS_STATUS_ALLOC_FAILED"}), true},
		{&CUDAError{Call: "cudnnBackendFinalize", Code: 4000, Name: "CUDNN_STATUS_ALLOC_FAILED"}, true},
		{&CUDAError{Call: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}, false},
		{&CUDAError{Call: "cublasGemmEx", Code: 15, Name: "CUBLAS_STATUS_NOT_SUPPORTED"}, false},
		{fmt.Errorf("out of memory"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsOutOfMemory(tt.err); got != tt.want {
			t.Errorf("IsOutOfMemory(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
