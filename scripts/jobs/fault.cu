// A kernel that faults on purpose, for scripts/gpu-remote.sh: every thread
// stores a gigabyte past the end of c, an address nothing maps, so the GPU
// stops the kernel with an illegal-address error and the worker that ran
// it is replaced.
extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i + (1u << 28)] = a[i] + b[i];
}
