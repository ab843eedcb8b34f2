// Exercise: the dot product of each row of two fp16 matrices, written in
// fp16: out[r] = Σ_j x[r][j]·y[r][j], j from 0 to n − 1.
//
// Each fp16 value is held as its 16 bits (unsigned short). h2f, from
// cudarepl.cuh, gives the float an fp16 stands for, exactly; f2h rounds a
// float to the nearest fp16. Arithmetic on floats rounds to fp32 (24
// significant bits); a value stored in fp16 keeps 11.
//
// Launched like dot_h_v1: one block of 256 threads per row (blockIdx.x is
// the row), any n ≥ 1, rows up to 2²⁰ long. The sum of the block's 256
// partial sums and the rounding of the row's total to fp16 are written:
// what is left is each thread's partial sum. As handed out, every partial
// sum is 0, and the kernel fails its checks.

#include "cudarepl.cuh"

extern "C" __global__ void dot_exercise(const unsigned short* x, const unsigned short* y, unsigned short* out, int rows, int n) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    if (r >= rows) return;
    const unsigned short* xr = x + r * n;
    const unsigned short* yr = y + r * n;
    int t = threadIdx.x;

    float partial = 0.0f;
    // TODO: add into partial the products xr[j]·yr[j] of this thread's
    // columns, j = t, t + blockDim.x, t + 2·blockDim.x, … while j < n.

    s[t] = partial;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[r] = f2h(s[0]);
}
