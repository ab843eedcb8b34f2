// A planted mistake: the guard lets i = n through, one element past the
// last; that thread reads a[n] and b[n] and writes c[n].
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        float x = a[i];
        float y = b[i];
        c[i] = x + y;
    }
}
