// A planted mistake: chain_step's body pasted into a loop, so every link
// reads x rather than the last link's result, and the chain is one link.
extern "C" __global__ void chain_fused_exercise(const float* x, float* y, int n, int links, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int k = 0; k < links; ++k) y[i] = fmaf(a, x[i], b);
}
