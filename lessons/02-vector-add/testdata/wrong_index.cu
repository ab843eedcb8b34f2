// A planted mistake: threadIdx.x alone repeats in every block, so every
// block works on elements 0 to 255 and nothing past them is written.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = threadIdx.x;
    if (i < n) {
        float x = a[i];
        float y = b[i];
        c[i] = x + y;
    }
}
