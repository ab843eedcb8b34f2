// A mistake: the padding off by one. The window starts at pixel (p, q)
// instead of being centred on it (h = p + r where p − 1 + r is meant), so
// every output is its right and lower neighbour's, and the last row and
// column see padding on one side only.
extern "C" __global__ void conv_direct_exercise(const float* x, const float* w, float* y, int N, int C, int H, int W, int K) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)N * H * W * K) return;
    int k = (int)(i % K);
    int q = (int)(i / K % W), p = (int)(i / K / W % H), n = (int)(i / K / W / H);
    float acc = 0.0f;
    for (int r = 0; r < 3; r++) {
        for (int s = 0; s < 3; s++) {
            int h = p + r, v = q + s;
            if (h < 0 || h >= H || v < 0 || v >= W) continue;
            for (int c = 0; c < C; c++)
                acc += x[(((long long)n * H + h) * W + v) * C + c] * w[((k * 3 + r) * 3 + s) * C + c];
        }
    }
    y[i] = acc;
}
