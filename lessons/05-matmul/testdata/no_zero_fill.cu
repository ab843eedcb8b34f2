// A planted mistake: elements outside A and B are skipped, not zeroed, so the
// last, partial tile keeps the previous tile's values past K and adds them again.
extern "C" __global__ void matmul_exercise(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        if (row < M && t + tx < K) As[ty][tx] = A[row * K + t + tx];
        if (t + ty < K && col < N) Bs[ty][tx] = B[(t + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < T; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
