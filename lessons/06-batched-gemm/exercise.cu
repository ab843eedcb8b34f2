// Exercise: one launch for the whole batch.
//
// matmul_batched_exercise computes a batch of products C_i = A_i·B_i with
// lesson 5's tiled kernel, matmul_v3: a block of 32×32 threads for each
// 32×32 tile of C, each thread one element. It is launched as
// matmul_batched_v1 is: blocks of 32×32 threads on a grid of
// ⌈N/32⌉ × ⌈M/32⌉ × batch blocks, with A, B and C pointing at the start of
// the batch's matrices.
//
// The products are stored back to back, every matrix row-major: the
// batch's A is its M×K matrices one after the other, its B the K×N ones,
// its C the M×N ones. The loop below computes one product from A, B and C
// as they point when it starts.
//
// As handed out, every block computes the first product, so 'check' fails:
// the other products' C are never written. Fill in the TODO, then have it
// judged: 'check' in the REPL, or run its cell in a notebook.

extern "C" __global__ void matmul_batched_exercise(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    // TODO: point A, B and C at the matrices of the product this block
    // computes
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
