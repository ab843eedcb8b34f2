// A planted mistake: no bounds check, so the last block's spare threads
// write past the end of y.
extern "C" __global__ void chain_exercise(const float* x, float* y, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + b;
}
