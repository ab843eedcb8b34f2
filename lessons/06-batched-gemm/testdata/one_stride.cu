// A mistake: every matrix moved by M·N, the size of a product's C, which is
// also A's size only when K = N, and B's only when K = M.
extern "C" __global__ void matmul_batched_exercise(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    size_t product = (size_t)blockIdx.z * M * N;
    A += product;
    B += product;
    C += product;
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
