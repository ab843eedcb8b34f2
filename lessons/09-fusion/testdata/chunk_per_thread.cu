// A mistake: correct, but each thread takes its own contiguous run of
// elements. A warp's 32 threads then read 32 floats a run apart (125
// floats at 2²⁶ on 2112 blocks of 256), 32 sectors a load where
// neighbouring floats take 4, so it is too slow to pass.
extern "C" __global__ void fusion_exercise(const float* a, const float* b, const float* c, float* y, int n) {
    int threads = gridDim.x * blockDim.x;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = (n + threads - 1) / threads;
    int end = min(n, (t + 1) * chunk);
    for (int i = t * chunk; i < end; i++)
        y[i] = 1.0f / (1.0f + expf(-(a[i] + b[i] * c[i])));
}
