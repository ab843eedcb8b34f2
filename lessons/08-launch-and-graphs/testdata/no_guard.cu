// A planted mistake: no bounds check, so the last block's spare threads
// write past the end of y.
extern "C" __global__ void chain_fused_exercise(const float* x, float* y, int n, int links, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int k = 0; k < links; ++k) v = fmaf(a, v, b);
    y[i] = v;
}
