// Exercise: the shared-memory tiled matrix product, C = A·B, row-major.
//
// Launched like matmul_v3: blocks of 32×32 threads, one per output of a
// 32×32 tile of C. Fill in the TODOs, then have it judged: 'check' in the
// REPL, or run its cell in a notebook.

extern "C" __global__ void matmul_exercise(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        // TODO: load As[ty][tx] from A and Bs[ty][tx] from B (0 outside the matrices)
        // TODO: wait until the whole tile is loaded
        for (int k = 0; k < T; k++) acc += As[ty][k] * Bs[k][tx];
        // TODO: wait until everyone is done with the tile
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
