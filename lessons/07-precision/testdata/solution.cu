// A solution: each fp16 widened to float before the product, which is then
// exact, and the running sum kept in fp32.

#include "cudarepl.cuh"

extern "C" __global__ void dot_exercise(const unsigned short* x, const unsigned short* y, unsigned short* out, int rows, int n) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    if (r >= rows) return;
    const unsigned short* xr = x + r * n;
    const unsigned short* yr = y + r * n;
    int t = threadIdx.x;

    float partial = 0.0f;
    for (int j = t; j < n; j += blockDim.x) partial += h2f(xr[j]) * h2f(yr[j]);

    s[t] = partial;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[r] = f2h(s[0]);
}
