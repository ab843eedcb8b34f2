// A mistake: the product taken from blockIdx.x, which numbers the tiles
// along a row of C, instead of blockIdx.z, which numbers the products.
extern "C" __global__ void matmul_batched_exercise(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    A += (size_t)blockIdx.x * M * K;
    B += (size_t)blockIdx.x * K * N;
    C += (size_t)blockIdx.x * M * N;
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
