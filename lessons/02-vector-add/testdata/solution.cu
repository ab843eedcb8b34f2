// A solution: threads past the last element return before they touch
// memory.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    float y = b[i];
    c[i] = x + y;
}
