// A planted mistake: the running sum kept in fp16, as the inputs are, and
// converted to float after the sum: every addition rounded to 11
// significant bits. Fine on short rows; on long rows of positive terms
// the sum falls behind, and products below fp16's range never count.

#include "cudarepl.cuh"

extern "C" __global__ void dot_exercise(const unsigned short* x, const unsigned short* y, unsigned short* out, int rows, int n) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    if (r >= rows) return;
    const unsigned short* xr = x + r * n;
    const unsigned short* yr = y + r * n;
    int t = threadIdx.x;

    unsigned short acc = 0;  // the running sum, in fp16
    for (int j = t; j < n; j += blockDim.x) acc = f2h(h2f(acc) + h2f(xr[j]) * h2f(yr[j]));
    float partial = h2f(acc);

    s[t] = partial;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[r] = f2h(s[0]);
}
