// A planted mistake: the loop's counter never moves, so the kernel never
// ends. The worker's time limit stops it, and its other sizes are skipped.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = i; j < n; j += 0) {
        if (j < n) c[j] = a[j] + b[j];
    }
}
