// Exercise: the chain's scale, causal mask and softmax in one kernel, fp32.
//
// Row r of x holds the S scores of query i = r mod S, one for each key j.
// y must be the softmax over the keys of scale·x. With causal set, query i
// may not see the keys after it: for every j > i, y is 0, and those keys
// take no part in the max or the sum.
//
// Launched like masked_softmax: one block of 256 threads per row
// (blockIdx.x is the row), any S ≥ 1. The reductions of the row's max and
// sum across the block are written. As handed out, the kernel computes the
// softmax of x itself, unscaled and unmasked: until the three TODOs are
// done it is expected to fail its checks.

extern "C" __global__ void masked_softmax_exercise(const float* x, float* y, int rows, int S, float scale, int causal) {
    __shared__ float s[256];
    long long r = blockIdx.x;
    const float* xr = x + r * S;
    float* yr = y + r * S;
    int i = (int)(r % S);  // the query this row belongs to
    int t = threadIdx.x;

    float m = __int_as_float(0xff800000);  // −∞, the max of nothing
    // TODO: the max of the scaled scores of the keys query i may see.
    for (int j = t; j < S; j += blockDim.x) m = fmaxf(m, xr[j]);
    s[t] = m;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] = fmaxf(s[t], s[t + half]);
        __syncthreads();
    }
    m = s[0];
    __syncthreads();  // every thread has read the max before s is reused

    float d = 0.0f;
    // TODO: the sum of exp(score − m) over the same keys, each score scaled.
    for (int j = t; j < S; j += blockDim.x) d += expf(xr[j] - m);
    s[t] = d;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    d = s[0];

    // TODO: every element of the row written: the probability of each key
    // query i sees, and 0 for each key it may not see.
    for (int j = t; j < S; j += blockDim.x) yr[j] = expf(xr[j] - m) / d;
}
