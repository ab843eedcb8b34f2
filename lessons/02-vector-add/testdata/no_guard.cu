// A planted mistake: the guard is missing, so the last block writes past n.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
