// Kernels for the GPU tests of package gpu.

// vadd: one thread per element; the guard keeps the last block in bounds.
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// vadd4: each thread moves 16-byte float4s (fewer, wider memory
// instructions); the scalar tail covers n not a multiple of 4.
extern "C" __global__ void vadd4(const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    if (i < n4) {
        float4 x = reinterpret_cast<const float4*>(a)[i];
        float4 y = reinterpret_cast<const float4*>(b)[i];
        reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    if (i < n - 4 * n4) c[4 * n4 + i] = a[4 * n4 + i] + b[4 * n4 + i];
}

// vadd_oob: writes one tebibyte past c, far outside any allocation.
extern "C" __global__ void vadd_oob(float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i + (1ull << 38)] = 1.0f;
}

// spin never returns while *flag is 0: the volatile read is redone each time.
extern "C" __global__ void spin(volatile int* flag) {
    while (*flag == 0) {
    }
}

// bump adds 1 to *x: a tiny kernel for launch and graph timings.
extern "C" __global__ void bump(int* x) {
    if (threadIdx.x == 0) *x += 1;
}
