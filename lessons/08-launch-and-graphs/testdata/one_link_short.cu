// A planted mistake: the first link is taken to be the load of x, so the
// loop starts at the second link and the chain is one link short.
extern "C" __global__ void chain_fused_exercise(const float* x, float* y, int n, int links, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int k = 1; k < links; ++k) v = fmaf(a, v, b);
    y[i] = v;
}
