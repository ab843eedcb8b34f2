// A planted mistake: the tree's barriers are inside if (t < half), so only some threads reach them, which is undefined; on the H100 the kernel never finishes, plainly or under synccheck, and the check's time limit stops it.
extern "C" __global__ void softmax_exercise(const float* x, float* y, int rows, int cols) {
    __shared__ float s[256];
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    int t = threadIdx.x;

    float m = __int_as_float(0xff800000);
    for (int c = t; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    s[t] = m;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) {
            s[t] = fmaxf(s[t], s[t + half]);
            __syncthreads();
        }
    }
    m = s[0];
    __syncthreads();

    float d = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) d += expf(xr[c] - m);
    s[t] = d;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) {
            s[t] += s[t + half];
            __syncthreads();
        }
    }
    d = s[0];

    for (int c = t; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) / d;
}
