// A planted mistake: threadIdx.x alone repeats in every block.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
