// A solution: each warp reduces its 32 values by shuffles, lane 0 of each
// leaves the warp's result in shared memory, and every thread reduces the
// eight results by shuffles once more.
extern "C" __global__ void softmax_exercise(const float* x, float* y, int rows, int cols) {
    __shared__ float s[256];
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    int t = threadIdx.x;

    float m = __int_as_float(0xff800000);  // −∞, the max of nothing
    for (int c = t; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    int lane = t % 32, warps = blockDim.x / 32;
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) s[t / 32] = m;
    __syncthreads();
    m = lane < warps ? s[lane] : __int_as_float(0xff800000);
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    __syncthreads();  // every thread has read s before the sums overwrite it

    float d = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) d += expf(xr[c] - m);
    for (int off = 16; off > 0; off /= 2) d += __shfl_xor_sync(0xffffffffu, d, off);
    if (lane == 0) s[t / 32] = d;
    __syncthreads();
    d = lane < warps ? s[lane] : 0.0f;
    for (int off = 16; off > 0; off /= 2) d += __shfl_xor_sync(0xffffffffu, d, off);

    for (int c = t; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) / d;
}
