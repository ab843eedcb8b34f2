// A planted mistake: only the keys the query sees are written; the masked
// probabilities keep whatever y held before, which the check poisons.
extern "C" __global__ void masked_softmax_exercise(const float* x, float* y, int rows, int S, float scale, int causal) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    const float* xr = x + r * S;
    float* yr = y + r * S;
    int i = (int)(r % S);
    int t = threadIdx.x;
    int keys = causal ? i + 1 : S;

    float m = __int_as_float(0xff800000);
    for (int j = t; j < keys; j += blockDim.x) m = fmaxf(m, scale * xr[j]);
    s[t] = m;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] = fmaxf(s[t], s[t + half]);
        __syncthreads();
    }
    m = s[0];
    __syncthreads();

    float d = 0.0f;
    for (int j = t; j < keys; j += blockDim.x) d += expf(scale * xr[j] - m);
    s[t] = d;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    d = s[0];

    for (int j = t; j < keys; j += blockDim.x) yr[j] = expf(scale * xr[j] - m) / d;
}
