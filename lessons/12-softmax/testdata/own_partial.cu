// A planted mistake: after each tree every thread reads its own slot, s[t], a partial result, instead of the row's in s[0].
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
        if (t < half) s[t] = fmaxf(s[t], s[t + half]);
        __syncthreads();
    }
    m = s[t];
    __syncthreads();

    float d = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) d += expf(xr[c] - m);
    s[t] = d;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    d = s[t];

    for (int c = t; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) / d;
}
