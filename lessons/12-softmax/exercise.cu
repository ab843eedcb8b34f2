// Exercise: softmax over each row of a rows×cols row-major matrix, fp32.
//
// Launched like softmax_v2: one block of 256 threads per row (blockIdx.x is
// the row), any cols ≥ 1. The loops that give each thread the max and the
// sum of its own columns are written; what is missing is combining the 256
// threads' values into the row's, through shared memory. Until the two
// TODOs are done the kernel is expected to fail its checks.

extern "C" __global__ void softmax_exercise(const float* x, float* y, int rows, int cols) {
    __shared__ float s[256];
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    int t = threadIdx.x;

    float m = __int_as_float(0xff800000);  // −∞, the max of nothing
    for (int c = t; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    // TODO: the row's max: every thread's m, reduced across the block into
    // s[0] (halve the active threads each step, with a barrier between
    // steps), then read back by every thread.

    float d = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) d += expf(xr[c] - m);
    // TODO: the row's sum, reduced the same way.

    for (int c = t; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) / d;
}
