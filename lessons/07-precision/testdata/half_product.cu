// A planted mistake: each product rounded to fp16 before it is added in
// fp32, as a product of two fp16 values computed in fp16 is. Harmless
// where the products are normal fp16 values; a product below fp16's
// smallest subnormal rounds to 0, and a row of them sums to 0.

#include "cudarepl.cuh"

extern "C" __global__ void dot_exercise(const unsigned short* x, const unsigned short* y, unsigned short* out, int rows, int n) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    if (r >= rows) return;
    const unsigned short* xr = x + r * n;
    const unsigned short* yr = y + r * n;
    int t = threadIdx.x;

    float partial = 0.0f;
    for (int j = t; j < n; j += blockDim.x) partial += h2f(f2h(h2f(xr[j]) * h2f(yr[j])));

    s[t] = partial;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[r] = f2h(s[0]);
}
