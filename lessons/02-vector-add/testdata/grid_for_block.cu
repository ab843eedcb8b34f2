// A planted mistake: gridDim.x where blockDim.x belongs. At n = 1000 the
// grid is 4 blocks of 256, and block k starts at 4k, not 256k: the blocks
// overlap, and nothing past element 4·3 + 255 = 267 is written.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * gridDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        float y = b[i];
        c[i] = x + y;
    }
}
