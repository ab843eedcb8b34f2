// A planted mistake: the guard is missing, so the spare threads of the last
// block read past the end of a and b and write past the end of c.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float y = b[i];
    c[i] = x + y;
}
