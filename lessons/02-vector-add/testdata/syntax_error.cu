extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x  // planted: the semicolon is missing
    if (i < n) c[i] = a[i] + b[i];
}
