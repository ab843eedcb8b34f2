// A correct kernel that includes a CUDA toolkit header: it compiles where
// the toolkit's headers are found, and reads as ordinary CUDA.
#include <cuda_fp16.h>

static_assert(sizeof(__half) == 2, "a half is two bytes");

extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = __fadd_rn(a[i], b[i]);
}
