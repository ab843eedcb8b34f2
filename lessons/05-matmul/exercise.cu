// Exercise: the shared-memory tiled matrix product, C = A·B, all row-major:
// A is M×K, B is K×N, C is M×N, for any M, N and K.
//
// Launched like matmul_v3: blocks of 32×32 threads, thread (tx, ty) of block
// (bx, by) computing C[by·32 + ty][bx·32 + tx]. The grid covers C with whole
// blocks, so where M or N is not a multiple of 32 the last blocks have
// threads with no output. The loop over the tiles and the inner product are
// written; staging the tiles, the synchronisation the block needs and the
// store of C are yours. As handed out it writes nothing, and is expected to
// fail its checks: fill in the TODOs, then have it judged ('check' in the
// REPL, or run its cell in a notebook), and run 'check --sanitize racecheck'
// on it as well.

extern "C" __global__ void matmul_exercise(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];  // the tile of A at depth t: As[i][k] is A[by·32 + i][t + k]
    __shared__ float Bs[T][T];  // the tile of B at depth t: Bs[k][j] is B[t + k][bx·32 + j]
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        // TODO: this thread's share of the two tiles, As[ty][tx] and
        // Bs[ty][tx], so that the inner product below reads the right values
        for (int k = 0; k < T; k++) acc += As[ty][k] * Bs[k][tx];
    }
    // TODO: store acc as C[row][col]
}
