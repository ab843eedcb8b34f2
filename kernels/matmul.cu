// Matrix product, C = A·B, fp32, every matrix row-major: A is M×K, B is K×N,
// C is M×N. Each output is a dot product of length K: 2·M·N·K flops over
// 4·(M·K + K·N + M·N) bytes at the least, so a good kernel is bound by
// arithmetic, not memory. The versions differ in how many times each input
// byte is fetched from global memory, how, and how each multiply-add is fed
// from shared memory. The figure closing each rung's comment, v1 to v7, is
// its speed at 4096³ on the H100 (lesson 5's recorded ladder): v1's in
// TFLOP/s, the others' over the rung before. The kernels between v6 and v7
// are timed in the lesson's step "One change at a time", at 4096³ on the
// H200: the figure closing each of their comments, and the second in v7's,
// is its speed over the kernel it changes there, the median of 3 rounds'
// ratios.

// v1: one thread per output; threadIdx.x runs down a column of C, so a warp's
// loads of A are a row apart and each 32-byte sector it fetches serves one float
// (0.50 TFLOP/s).
extern "C" __global__ void matmul_v1(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; k++) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

// v2: threadIdx.x runs along a row of C instead; a warp now reads 32
// consecutive floats of B (one 128-byte line) and one broadcast float of A
// (12.7× v1).
extern "C" __global__ void matmul_v2(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; k++) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

// v3: stage 32×32 tiles of A and B in shared memory; each float fetched from
// global memory is then used 32 times, so global load requests fall
// 32-fold (DRAM traffic does not: L1 and L2 already served v2's re-reads;
// 1.43× v2).
extern "C" __global__ void matmul_v3(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        // Out-of-range elements load as 0, which adds nothing to the sum.
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();  // the tiles are complete before anyone reads them
        for (int k = 0; k < T; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // and fully read before the next loop overwrites them
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

// v4: each thread computes a column of 8 outputs (1D register blocking) of a
// 64×64 tile: one value of B from shared memory now feeds 8 multiply-adds
// (1.85× v3).
extern "C" __global__ void __launch_bounds__(512) matmul_v4(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 64, BN = 64, BK = 8, TM = 8;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    int tid = threadIdx.x;
    int tcol = tid % BN, trow = tid / BN;      // this thread's column, and which 8 rows
    int aRow = tid / BK, aCol = tid % BK;      // the element of A it loads
    int bRow = tid / BN, bCol = tid % BN;      // and of B
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM] = {0.0f};
    for (int t = 0; t < K; t += BK) {
        As[aRow * BK + aCol] = (row0 + aRow < M && t + aCol < K) ? A[(row0 + aRow) * K + t + aCol] : 0.0f;
        Bs[bRow * BN + bCol] = (t + bRow < K && col0 + bCol < N) ? B[(t + bRow) * N + col0 + bCol] : 0.0f;
        __syncthreads();
        for (int k = 0; k < BK; k++) {
            float b = Bs[k * BN + tcol];
            for (int r = 0; r < TM; r++) acc[r] += As[(trow * TM + r) * BK + k] * b;
        }
        __syncthreads();
    }
    for (int r = 0; r < TM; r++) {
        int row = row0 + trow * TM + r, col = col0 + tcol;
        if (row < M && col < N) C[row * N + col] = acc[r];
    }
}

// v5: each thread computes an 8×8 block of outputs (2D register blocking) of
// a 128×128 tile: 8 values of A and 8 of B in registers feed 64 multiply-adds
// (1.50× v4). Its shared-memory reads collide: a warp's two rows of threads
// read A 64 floats apart, in one bank, and its 16 columns of threads read B
// 8 floats apart (Nsight Compute: 16 bank conflicts a warp each step of k).
extern "C" __global__ void __launch_bounds__(256) matmul_v5(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    int tid = threadIdx.x;
    int trow = tid / (BN / TN), tcol = tid % (BN / TN);  // this thread's 8×8 block
    int aRow = tid / BK, aCol = tid % BK;                 // loads rows aRow, aRow+32, …
    int bRow = tid / BN, bCol = tid % BN;                 // loads rows bRow, bRow+2, …
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float regA[TM], regB[TN];
    for (int t = 0; t < K; t += BK) {
        for (int r = 0; r < BM; r += 256 / BK) {
            int gr = row0 + aRow + r, gc = t + aCol;
            As[(aRow + r) * BK + aCol] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
        }
        for (int r = 0; r < BK; r += 256 / BN) {
            int gr = t + bRow + r, gc = col0 + bCol;
            Bs[(bRow + r) * BN + bCol] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; k++) {
            for (int i = 0; i < TM; i++) regA[i] = As[(trow * TM + i) * BK + k];
            for (int j = 0; j < TN; j++) regB[j] = Bs[k * BN + tcol * TN + j];
            for (int i = 0; i < TM; i++)
                for (int j = 0; j < TN; j++) acc[i][j] += regA[i] * regB[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++) {
            int row = row0 + trow * TM + i, col = col0 + tcol * TN + j;
            if (row < M && col < N) C[row * N + col] = acc[i][j];
        }
}

// v6: float4 loads and stores, and A's tile stored transposed in shared memory
// so that a thread's 8 values of A are contiguous too: a quarter of the load
// instructions; A's reads no longer conflict, B's still do (1.11× v5).
// Needs K and N to be multiples of 4 (16-byte aligned rows).
extern "C" __global__ void __launch_bounds__(256) matmul_v6(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    __shared__ float4 As4[BK * BM / 4];  // As[k][m], transposed
    __shared__ float4 Bs4[BK * BN / 4];  // Bs[k][n]
    float* As = reinterpret_cast<float*>(As4);
    float* Bs = reinterpret_cast<float*>(Bs4);
    int tid = threadIdx.x;
    int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    int aRow = tid / (BK / 4), aCol4 = tid % (BK / 4);   // one float4 of A: 128 rows × 2 float4s
    int bRow = tid / (BN / 4), bCol4 = tid % (BN / 4);   // one float4 of B: 8 rows × 32 float4s
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float regA[TM], regB[TN];
    for (int t = 0; t < K; t += BK) {
        int gr = row0 + aRow, gc = t + 4 * aCol4;
        float4 a = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[gr * K + gc]) : make_float4(0, 0, 0, 0);
        As[(4 * aCol4 + 0) * BM + aRow] = a.x;
        As[(4 * aCol4 + 1) * BM + aRow] = a.y;
        As[(4 * aCol4 + 2) * BM + aRow] = a.z;
        As[(4 * aCol4 + 3) * BM + aRow] = a.w;
        gr = t + bRow;
        gc = col0 + 4 * bCol4;
        Bs4[bRow * (BN / 4) + bCol4] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[gr * N + gc]) : make_float4(0, 0, 0, 0);
        __syncthreads();
        for (int k = 0; k < BK; k++) {
            *reinterpret_cast<float4*>(&regA[0]) = As4[(k * BM + trow * TM) / 4];
            *reinterpret_cast<float4*>(&regA[4]) = As4[(k * BM + trow * TM + 4) / 4];
            *reinterpret_cast<float4*>(&regB[0]) = Bs4[(k * BN + tcol * TN) / 4];
            *reinterpret_cast<float4*>(&regB[4]) = Bs4[(k * BN + tcol * TN + 4) / 4];
            for (int i = 0; i < TM; i++)
                for (int j = 0; j < TN; j++) acc[i][j] += regA[i] * regB[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; i++) {
        int row = row0 + trow * TM + i;
        if (row >= M) break;
        for (int j = 0; j < TN; j += 4) {
            int col = col0 + tcol * TN + j;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[row * N + col]) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        }
    }
}

// The six changes from v6 to v7, one kernel each, every one v6 or the
// kernel before it with one thing changed: two stages, 16-deep tiles, the
// 4×4 halves, every loop unrolled, one block per SM declared, and, in v7
// itself, 64-bit indexing. matmul_v7c_one_block is a control beside them:
// v7c with v7e's launch bounds and none of v7d's unrolling. The step "One
// change at a time" times each against the kernel it changes.

// matmul_v7a_two_stages is v6 with two shared-memory stages: the next
// tiles are fetched into registers while the current ones feed the math,
// then stored into the other stage, so a round of BK needs one barrier
// instead of two. Everything else is v6's. Needs K and N multiples of 4
// (1.11× v6).
extern "C" __global__ void __launch_bounds__(256) matmul_v7a_two_stages(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    int tid = threadIdx.x;
    int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra, rb;  // the next tiles' float4s, on their way to shared memory
    float acc[TM][TN] = {{0.0f}};
    float regA[TM], regB[TN];

    // fetch: float4 tid of A's tile at depth t (row tid/2) and of B's
    // (row tid/32), from global memory into registers.
    auto fetch = [&](int t) {
        int gr = row0 + tid / 2, gc = t + 4 * (tid % 2);
        ra = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[gr * K + gc]) : make_float4(0, 0, 0, 0);
        gr = t + tid / 32;
        gc = col0 + 4 * (tid % 32);
        rb = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[gr * N + gc]) : make_float4(0, 0, 0, 0);
    };
    // stash: the fetched float4s into stage s, A transposed.
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
        int r = tid / 2, c = 4 * (tid % 2);
        As[(c + 0) * BM + r] = ra.x;
        As[(c + 1) * BM + r] = ra.y;
        As[(c + 2) * BM + r] = ra.z;
        As[(c + 3) * BM + r] = ra.w;
        Bs4[s][tid] = rb;
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);  // in flight while the math below runs
        for (int k = 0; k < BK; k++) {
            *reinterpret_cast<float4*>(&regA[0]) = As4[s][(k * BM + trow * TM) / 4];
            *reinterpret_cast<float4*>(&regA[4]) = As4[s][(k * BM + trow * TM + 4) / 4];
            *reinterpret_cast<float4*>(&regB[0]) = Bs4[s][(k * BN + tcol * TN) / 4];
            *reinterpret_cast<float4*>(&regB[4]) = Bs4[s][(k * BN + tcol * TN + 4) / 4];
            for (int i = 0; i < TM; i++)
                for (int j = 0; j < TN; j++) acc[i][j] += regA[i] * regB[j];
        }
        if (more) stash(s ^ 1);  // the other stage: nobody reads it in this round
        __syncthreads();         // stage s^1 is complete, and everyone is done with stage s
        s ^= 1;
    }
    for (int i = 0; i < TM; i++) {
        int row = row0 + trow * TM + i;
        if (row >= M) break;
        for (int j = 0; j < TN; j += 4) {
            int col = col0 + tcol * TN + j;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[row * N + col]) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        }
    }
}

// matmul_v7b_deep_tiles is v7a with tiles 16 deep instead of 8: half as
// many rounds, so half the barriers, and each thread fetches and stashes
// two float4s of each tile instead of one. Needs K and N multiples of 4
// (1.10× v7a).
extern "C" __global__ void __launch_bounds__(256) matmul_v7b_deep_tiles(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 16, TM = 8, TN = 8, NT = 256;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    int tid = threadIdx.x;
    int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    float acc[TM][TN] = {{0.0f}};
    float regA[TM], regB[TN];

    // fetch: the tiles at depth t, from global memory into registers; float4
    // i of A's tile is row i/4, and float4 i of B's is row i/32.
    auto fetch = [&](int t) {
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = row0 + i / 4, gc = t + 4 * (i % 4);
            ra[h] = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[gr * K + gc]) : make_float4(0, 0, 0, 0);
        }
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = t + i / 32, gc = col0 + 4 * (i % 32);
            rb[h] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[gr * N + gc]) : make_float4(0, 0, 0, 0);
        }
    };
    // stash: the fetched tiles into shared-memory stage s, A transposed.
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 4, c = 4 * (i % 4);
            As[(c + 0) * BM + r] = ra[h].x;
            As[(c + 1) * BM + r] = ra[h].y;
            As[(c + 2) * BM + r] = ra[h].z;
            As[(c + 3) * BM + r] = ra[h].w;
        }
        for (int h = 0; h < 2; h++) Bs4[s][tid + NT * h] = rb[h];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);  // in flight while the math below runs
        for (int k = 0; k < BK; k++) {
            *reinterpret_cast<float4*>(&regA[0]) = As4[s][(k * BM + trow * TM) / 4];
            *reinterpret_cast<float4*>(&regA[4]) = As4[s][(k * BM + trow * TM + 4) / 4];
            *reinterpret_cast<float4*>(&regB[0]) = Bs4[s][(k * BN + tcol * TN) / 4];
            *reinterpret_cast<float4*>(&regB[4]) = Bs4[s][(k * BN + tcol * TN + 4) / 4];
            for (int i = 0; i < TM; i++)
                for (int j = 0; j < TN; j++) acc[i][j] += regA[i] * regB[j];
        }
        if (more) stash(s ^ 1);  // the other stage: nobody reads it in this round
        __syncthreads();         // stage s^1 is complete, and everyone is done with stage s
        s ^= 1;
    }
    for (int i = 0; i < TM; i++) {
        int row = row0 + trow * TM + i;
        if (row >= M) break;
        for (int j = 0; j < TN; j += 4) {
            int col = col0 + tcol * TN + j;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[row * N + col]) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        }
    }
}

// matmul_v7c_halves is v7b with each thread's 8×8 outputs split into 4×4
// quarters 64 rows and 64 columns apart: thread (trow, tcol) reads float4s
// trow and 16 + trow of each row of A's tile, tcol and 16 + tcol of B's,
// so the 8 lanes of each phase of a warp's float4 reads of B take 8
// consecutive float4s, all 32 banks once, where v6's took every other one.
// The reads index float4s as k·32 + row, where v7b's divide a float
// offset by 4. Needs K and N multiples of 4 (1.10× v7b).
extern "C" __global__ void __launch_bounds__(256) matmul_v7c_halves(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 16, NT = 256;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    int tid = threadIdx.x;
    int trow = tid / 16, tcol = tid % 16;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    float acc[8][8] = {{0.0f}};

    // fetch: the tiles at depth t, from global memory into registers; float4
    // i of A's tile is row i/4, and float4 i of B's is row i/32.
    auto fetch = [&](int t) {
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = row0 + i / 4, gc = t + 4 * (i % 4);
            ra[h] = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[gr * K + gc]) : make_float4(0, 0, 0, 0);
        }
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = t + i / 32, gc = col0 + 4 * (i % 32);
            rb[h] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[gr * N + gc]) : make_float4(0, 0, 0, 0);
        }
    };
    // stash: the fetched tiles into shared-memory stage s, A transposed.
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 4, c = 4 * (i % 4);
            As[(c + 0) * BM + r] = ra[h].x;
            As[(c + 1) * BM + r] = ra[h].y;
            As[(c + 2) * BM + r] = ra[h].z;
            As[(c + 3) * BM + r] = ra[h].w;
        }
        for (int h = 0; h < 2; h++) Bs4[s][tid + NT * h] = rb[h];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);  // in flight while the math below runs
        for (int k = 0; k < BK; k++) {
            float4 a0 = As4[s][k * (BM / 4) + trow], a1 = As4[s][k * (BM / 4) + 16 + trow];
            float4 b0 = Bs4[s][k * (BN / 4) + tcol], b1 = Bs4[s][k * (BN / 4) + 16 + tcol];
            float ra8[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float rb8[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++) acc[i][j] += ra8[i] * rb8[j];
        }
        if (more) stash(s ^ 1);  // the other stage: nobody reads it in this round
        __syncthreads();         // stage s^1 is complete, and everyone is done with stage s
        s ^= 1;
    }
    for (int i = 0; i < 8; i++) {
        int row = row0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + i - 4);
        if (row >= M) continue;
        for (int h = 0; h < 2; h++) {
            int col = col0 + 64 * h + tcol * 4;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[row * N + col]) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}

// matmul_v7c_one_block is a control: v7c with v7e's __launch_bounds__(256, 1)
// and none of v7d's unrolling, so that the step from v7c to v7e is timed in
// both orders. Needs K and N multiples of 4 (1.00× v7c; NVRTC gives it
// v7c's 115 registers).
extern "C" __global__ void __launch_bounds__(256, 1) matmul_v7c_one_block(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 16, NT = 256;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    int tid = threadIdx.x;
    int trow = tid / 16, tcol = tid % 16;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    float acc[8][8] = {{0.0f}};

    // fetch: the tiles at depth t, from global memory into registers; float4
    // i of A's tile is row i/4, and float4 i of B's is row i/32.
    auto fetch = [&](int t) {
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = row0 + i / 4, gc = t + 4 * (i % 4);
            ra[h] = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[gr * K + gc]) : make_float4(0, 0, 0, 0);
        }
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = t + i / 32, gc = col0 + 4 * (i % 32);
            rb[h] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[gr * N + gc]) : make_float4(0, 0, 0, 0);
        }
    };
    // stash: the fetched tiles into shared-memory stage s, A transposed.
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 4, c = 4 * (i % 4);
            As[(c + 0) * BM + r] = ra[h].x;
            As[(c + 1) * BM + r] = ra[h].y;
            As[(c + 2) * BM + r] = ra[h].z;
            As[(c + 3) * BM + r] = ra[h].w;
        }
        for (int h = 0; h < 2; h++) Bs4[s][tid + NT * h] = rb[h];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);  // in flight while the math below runs
        for (int k = 0; k < BK; k++) {
            float4 a0 = As4[s][k * (BM / 4) + trow], a1 = As4[s][k * (BM / 4) + 16 + trow];
            float4 b0 = Bs4[s][k * (BN / 4) + tcol], b1 = Bs4[s][k * (BN / 4) + 16 + tcol];
            float ra8[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float rb8[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++) acc[i][j] += ra8[i] * rb8[j];
        }
        if (more) stash(s ^ 1);  // the other stage: nobody reads it in this round
        __syncthreads();         // stage s^1 is complete, and everyone is done with stage s
        s ^= 1;
    }
    for (int i = 0; i < 8; i++) {
        int row = row0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + i - 4);
        if (row >= M) continue;
        for (int h = 0; h < 2; h++) {
            int col = col0 + 64 * h + tcol * 4;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[row * N + col]) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}

// matmul_v7d_unrolled is v7c with every loop unrolled (#pragma unroll):
// the fetch, stash and store loops and the 16 steps of k, as well as the
// 8×8 multiply-adds. Needs K and N multiples of 4 (1.15× v7c).
extern "C" __global__ void __launch_bounds__(256) matmul_v7d_unrolled(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 16, NT = 256;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    int tid = threadIdx.x;
    int trow = tid / 16, tcol = tid % 16;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    float acc[8][8] = {{0.0f}};

    // fetch: the tiles at depth t, from global memory into registers; float4
    // i of A's tile is row i/4, and float4 i of B's is row i/32.
    auto fetch = [&](int t) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = row0 + i / 4, gc = t + 4 * (i % 4);
            ra[h] = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[gr * K + gc]) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = t + i / 32, gc = col0 + 4 * (i % 32);
            rb[h] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[gr * N + gc]) : make_float4(0, 0, 0, 0);
        }
    };
    // stash: the fetched tiles into shared-memory stage s, A transposed.
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 4, c = 4 * (i % 4);
            As[(c + 0) * BM + r] = ra[h].x;
            As[(c + 1) * BM + r] = ra[h].y;
            As[(c + 2) * BM + r] = ra[h].z;
            As[(c + 3) * BM + r] = ra[h].w;
        }
#pragma unroll
        for (int h = 0; h < 2; h++) Bs4[s][tid + NT * h] = rb[h];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);  // in flight while the math below runs
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 a0 = As4[s][k * (BM / 4) + trow], a1 = As4[s][k * (BM / 4) + 16 + trow];
            float4 b0 = Bs4[s][k * (BN / 4) + tcol], b1 = Bs4[s][k * (BN / 4) + 16 + tcol];
            float ra8[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float rb8[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += ra8[i] * rb8[j];
        }
        if (more) stash(s ^ 1);  // the other stage: nobody reads it in this round
        __syncthreads();         // stage s^1 is complete, and everyone is done with stage s
        s ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = row0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + i - 4);
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int col = col0 + 64 * h + tcol * 4;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[row * N + col]) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}

// matmul_v7e_one_block is v7d declaring __launch_bounds__(256, 1): blocks
// of 256 threads, of which one an SM is all it needs. The registers a
// thread may use stay at most 255, as under v7d's (256); the step
// "Registers and occupancy" shows the registers NVRTC gives it. Needs K and
// N multiples of 4 (1.04× v7d).
extern "C" __global__ void __launch_bounds__(256, 1) matmul_v7e_one_block(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 16, NT = 256;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    int tid = threadIdx.x;
    int trow = tid / 16, tcol = tid % 16;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    float acc[8][8] = {{0.0f}};

    // fetch: the tiles at depth t, from global memory into registers; float4
    // i of A's tile is row i/4, and float4 i of B's is row i/32.
    auto fetch = [&](int t) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = row0 + i / 4, gc = t + 4 * (i % 4);
            ra[h] = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[gr * K + gc]) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = t + i / 32, gc = col0 + 4 * (i % 32);
            rb[h] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[gr * N + gc]) : make_float4(0, 0, 0, 0);
        }
    };
    // stash: the fetched tiles into shared-memory stage s, A transposed.
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 4, c = 4 * (i % 4);
            As[(c + 0) * BM + r] = ra[h].x;
            As[(c + 1) * BM + r] = ra[h].y;
            As[(c + 2) * BM + r] = ra[h].z;
            As[(c + 3) * BM + r] = ra[h].w;
        }
#pragma unroll
        for (int h = 0; h < 2; h++) Bs4[s][tid + NT * h] = rb[h];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);  // in flight while the math below runs
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 a0 = As4[s][k * (BM / 4) + trow], a1 = As4[s][k * (BM / 4) + 16 + trow];
            float4 b0 = Bs4[s][k * (BN / 4) + tcol], b1 = Bs4[s][k * (BN / 4) + 16 + tcol];
            float ra8[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float rb8[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += ra8[i] * rb8[j];
        }
        if (more) stash(s ^ 1);  // the other stage: nobody reads it in this round
        __syncthreads();         // stage s^1 is complete, and everyone is done with stage s
        s ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = row0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + i - 4);
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int col = col0 + 64 * h + tcol * 4;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[row * N + col]) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}

// v7: v6 with six changes, each a kernel of its own above and timed beside
// it in the step "One change at a time": two shared-memory stages (the next
// tiles fetched into registers while the current ones feed the math, one
// barrier a round), 16-deep tiles, each thread's 8×8 outputs as 4×4
// quarters 64 rows and columns apart (a warp's float4 reads of shared
// memory hit consecutive addresses: Nsight Compute counts no bank conflict
// on them, and its 50 M on the stores that transpose A), every loop
// unrolled, one block per SM declared, and 64-bit indexing, so that row·K
// cannot overflow (1.59× v6; 0.99× v7e). Needs K and N to be multiples of 4.
extern "C" __global__ void __launch_bounds__(256, 1) matmul_v7(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 16, NT = 256;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    int tid = threadIdx.x;
    int trow = tid / 16, tcol = tid % 16;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    float acc[8][8] = {{0.0f}};

    // fetch: the tiles at depth t, from global memory into registers; float4
    // i of A's tile is row i/4, and float4 i of B's is row i/32.
    auto fetch = [&](int t) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = row0 + i / 4, gc = t + 4 * (i % 4);
            ra[h] = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[(size_t)gr * K + gc]) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int gr = t + i / 32, gc = col0 + 4 * (i % 32);
            rb[h] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[(size_t)gr * N + gc]) : make_float4(0, 0, 0, 0);
        }
    };
    // stash: the fetched tiles into shared-memory stage s, A transposed.
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 4, c = 4 * (i % 4);
            As[(c + 0) * BM + r] = ra[h].x;
            As[(c + 1) * BM + r] = ra[h].y;
            As[(c + 2) * BM + r] = ra[h].z;
            As[(c + 3) * BM + r] = ra[h].w;
        }
#pragma unroll
        for (int h = 0; h < 2; h++) Bs4[s][tid + NT * h] = rb[h];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);  // in flight while the math below runs
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 a0 = As4[s][k * (BM / 4) + trow], a1 = As4[s][k * (BM / 4) + 16 + trow];
            float4 b0 = Bs4[s][k * (BN / 4) + tcol], b1 = Bs4[s][k * (BN / 4) + 16 + tcol];
            float ra8[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float rb8[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += ra8[i] * rb8[j];
        }
        if (more) stash(s ^ 1);  // the other stage: nobody reads it in this round
        __syncthreads();         // stage s^1 is complete, and everyone is done with stage s
        s ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = row0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + i - 4);
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int col = col0 + 64 * h + tcol * 4;
            if (col < N)  // N % 4 == 0: a float4 is all in or all out
                *reinterpret_cast<float4*>(&C[(size_t)row * N + col]) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}
