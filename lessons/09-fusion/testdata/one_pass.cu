// A mistake: fusion_v1's body, a thread an element, on a grid of fewer
// threads than elements: past the grid's last thread nothing is written.
extern "C" __global__ void fusion_exercise(const float* a, const float* b, const float* c, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f / (1.0f + expf(-(a[i] + b[i] * c[i])));
}
