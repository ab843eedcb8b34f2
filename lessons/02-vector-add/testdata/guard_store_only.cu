// The guard on the store only, the loads above it: in the source the spare
// threads read past the end of a and b. The compiler moves the two loads
// under the guard, since only the store uses them, so the kernel as
// compiled reads nothing past the end: the check and memcheck both pass it.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float y = b[i];
    if (i < n) c[i] = x + y;
}
