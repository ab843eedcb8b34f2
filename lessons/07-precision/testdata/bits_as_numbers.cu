// A planted mistake: the fp16 bits converted to float as integers
// ((float)xr[j] is 15360 for 1.0), not through h2f: every sum far past
// fp16's largest value, written as Inf.

#include "cudarepl.cuh"

extern "C" __global__ void dot_exercise(const unsigned short* x, const unsigned short* y, unsigned short* out, int rows, int n) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    if (r >= rows) return;
    const unsigned short* xr = x + r * n;
    const unsigned short* yr = y + r * n;
    int t = threadIdx.x;

    float partial = 0.0f;
    for (int j = t; j < n; j += blockDim.x) partial += (float)xr[j] * (float)yr[j];

    s[t] = partial;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[r] = f2h(s[0]);
}
