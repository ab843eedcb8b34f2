// A mistake: the pieces fused in the wrong order, sigmoid(a·b + c) where
// mul_f takes b and c, and add_f adds a to their product.
extern "C" __global__ void fusion_exercise(const float* a, const float* b, const float* c, float* y, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = 1.0f / (1.0f + expf(-(a[i] * b[i] + c[i])));
}
