// Dot products of fp16 rows, the sum inside every matrix product:
// out[r] = Σ_j x[r][j]·y[r][j] for two rows×n row-major matrices of fp16,
// out in fp16. Each fp16 travels as its 16 bits (unsigned short); h2f and
// f2h (cudarepl.cuh) convert, so no toolkit header is needed.
//
// The product of two fp16 values is exact in fp32 (11 + 11 significant
// bits fit in fp32's 24), so a kernel that widens before it multiplies
// rounds only its additions, each by at most 2⁻²⁴ of the running sum. One
// that keeps its running sum in fp16 rounds each addition to 11 bits, by
// up to 2⁻¹¹ of the sum. Both read 4 bytes for every product.

#include "cudarepl.cuh"

// sum256 adds v over the block's threads in fp32, as a tree in shared
// memory s of blockDim.x floats (a power of two, at most 256): each step
// adds the upper half of the values to the lower half. Every thread gets
// the total.
__device__ float sum256(float v, float* s) {
    int t = threadIdx.x;
    s[t] = v;
    __syncthreads();  // every thread's value is in s before any is read
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();  // this step's sums are written before the next reads them
    }
    return s[0];
}

// v1: a block of 256 threads per row: thread t adds the products of columns
// t, t + 256, t + 512, … in fp32, the block adds the 256 partial sums in
// fp32, and the row's sum is rounded to fp16 once, at the end.
extern "C" __global__ void __launch_bounds__(256) dot_h_v1(const unsigned short* x, const unsigned short* y, unsigned short* out, int rows, int n) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    if (r >= rows) return;  // the whole block leaves together
    const unsigned short* xr = x + r * n;
    const unsigned short* yr = y + r * n;
    float partial = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) partial += h2f(xr[j]) * h2f(yr[j]);  // the product is exact: only the sum rounds
    float total = sum256(partial, s);
    if (threadIdx.x == 0) out[r] = f2h(total);
}

// dot_h_acc16 is dot_h_v1 with each thread's running sum kept in fp16, as
// the inputs are: every addition rounded to 11 significant bits, not 24.
// It is the control the step "Summing in FP16" runs beside v1, and the
// mistake the exercise's checks must reject. On the H200 it wrote, bit for
// bit, what the lesson's model computes: a positive row of 2²⁰ came out
// 7.3×10⁻² of Σ|x·y| off (v1: 3.1×10⁻⁵), past the check's 9.8×10⁻⁴.
extern "C" __global__ void __launch_bounds__(256) dot_h_acc16(const unsigned short* x, const unsigned short* y, unsigned short* out, int rows, int n) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    if (r >= rows) return;
    const unsigned short* xr = x + r * n;
    const unsigned short* yr = y + r * n;
    unsigned short acc = 0;  // +0 in fp16
    for (int j = threadIdx.x; j < n; j += blockDim.x) acc = f2h(h2f(acc) + h2f(xr[j]) * h2f(yr[j]));
    float total = sum256(h2f(acc), s);
    if (threadIdx.x == 0) out[r] = f2h(total);
}
