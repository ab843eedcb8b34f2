// A mistake: x read as if it were stored NCHW (W innermost, each channel
// a plane), ((n·C + c)·H + h)·W + v, on data stored NHWC, where pixel
// (n, h, v)'s C channels sit side by side.
extern "C" __global__ void conv_direct_exercise(const float* x, const float* w, float* y, int N, int C, int H, int W, int K) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)N * H * W * K) return;
    int k = (int)(i % K);
    int q = (int)(i / K % W), p = (int)(i / K / W % H), n = (int)(i / K / W / H);
    float acc = 0.0f;
    for (int r = 0; r < 3; r++) {
        for (int s = 0; s < 3; s++) {
            int h = p - 1 + r, v = q - 1 + s;
            if (h < 0 || h >= H || v < 0 || v >= W) continue;
            for (int c = 0; c < C; c++)
                acc += x[(((long long)n * C + c) * H + h) * W + v] * w[((k * 3 + r) * 3 + s) * C + c];
        }
    }
    y[i] = acc;
}
