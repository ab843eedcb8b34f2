// A planted mistake: the masked scores are set to 0 instead of −∞, so
// exp(0 − m) gives the keys after the query a weight; right wherever
// causal is not set.
extern "C" __global__ void masked_softmax_exercise(const float* x, float* y, int rows, int S, float scale, int causal) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    const float* xr = x + r * S;
    float* yr = y + r * S;
    int i = (int)(r % S);
    int t = threadIdx.x;

    float m = __int_as_float(0xff800000);
    for (int j = t; j < S; j += blockDim.x) m = fmaxf(m, causal && j > i ? 0.0f : scale * xr[j]);
    s[t] = m;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] = fmaxf(s[t], s[t + half]);
        __syncthreads();
    }
    m = s[0];
    __syncthreads();

    float d = 0.0f;
    for (int j = t; j < S; j += blockDim.x) d += expf((causal && j > i ? 0.0f : scale * xr[j]) - m);
    s[t] = d;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    d = s[0];

    for (int j = t; j < S; j += blockDim.x) yr[j] = expf((causal && j > i ? 0.0f : scale * xr[j]) - m) / d;
}
