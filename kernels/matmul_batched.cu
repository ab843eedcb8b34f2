// Batched matrix products, C_i = A_i·B_i for a batch of products stored back
// to back, fp32, every matrix row-major: the i-th A (M×K), B (K×N) and C
// (M×N) start i·M·K, i·K·N and i·M·N floats in, and blockIdx.z picks the
// product, so one launch runs the whole batch. Every version is launched
// once for the batch; they differ in what a block does with its tile, the
// tuning lesson 5 teaches. The tuning notes of v3 and v4 (registers,
// instruction counts from the SASS) sit beside their code.

#include "cudarepl.cuh"

// v1: matmul_v3 over a batch: blockIdx.z picks the product, and one launch
// does the whole batch (lesson 6's H200 recording: 40 × 256³ in 162.4 µs,
// where matmul_v3's forty launches took 534.3).
extern "C" __global__ void matmul_batched_v1(const float* A, const float* B, float* C, int M, int N, int K) {
    const int T = 32;
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    A += (size_t)blockIdx.z * M * K;
    B += (size_t)blockIdx.z * K * N;
    C += (size_t)blockIdx.z * M * N;
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

// v2: matmul_v7's scheme (two stages, 8×8 outputs a thread) on 64×64 tiles
// of 64 threads: 16 blocks a 256³ product, each value read from shared
// memory feeding 8 multiply-adds where v1's feeds one (on the H200, 40 ×
// 256³ in 44.3 µs against v1's 162.4). Needs K and N to be multiples of 4.
extern "C" __global__ void __launch_bounds__(64) matmul_batched_v2(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 64, BN = 64, BK = 16;
    __shared__ float4 As4[2][BK * BM / 4];  // stage, then As[k][m] (transposed)
    __shared__ float4 Bs4[2][BK * BN / 4];  // stage, then Bs[k][n]
    A += (size_t)blockIdx.z * M * K;
    B += (size_t)blockIdx.z * K * N;
    C += (size_t)blockIdx.z * M * N;
    int tid = threadIdx.x;
    int trow = tid / 8, tcol = tid % 8;
    int aRow = tid / 4, aCol4 = tid % 4;    // A: 64 rows × 4 float4s, four passes of 16 rows
    int bRow = tid / 16, bCol4 = tid % 16;  // B: 16 rows × 16 float4s, four passes of 4 rows
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float4 ra[4], rb[4];
    float acc[8][8] = {{0.0f}};

    auto fetch = [&](int t) {
        for (int h = 0; h < 4; h++) {
            int gr = row0 + aRow + 16 * h, gc = t + 4 * aCol4;
            ra[h] = (gr < M && gc < K) ? *reinterpret_cast<const float4*>(&A[(size_t)gr * K + gc]) : make_float4(0, 0, 0, 0);
            gr = t + bRow + 4 * h;
            gc = col0 + 4 * bCol4;
            rb[h] = (gr < K && gc < N) ? *reinterpret_cast<const float4*>(&B[(size_t)gr * N + gc]) : make_float4(0, 0, 0, 0);
        }
    };
    auto stash = [&](int s) {
        float* As = reinterpret_cast<float*>(As4[s]);
        for (int h = 0; h < 4; h++) {
            int r = aRow + 16 * h;
            As[(4 * aCol4 + 0) * BM + r] = ra[h].x;
            As[(4 * aCol4 + 1) * BM + r] = ra[h].y;
            As[(4 * aCol4 + 2) * BM + r] = ra[h].z;
            As[(4 * aCol4 + 3) * BM + r] = ra[h].w;
            Bs4[s][(bRow + 4 * h) * (BN / 4) + bCol4] = rb[h];
        }
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        bool more = t + BK < K;
        if (more) fetch(t + BK);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 a0 = As4[s][k * (BM / 4) + trow], a1 = As4[s][k * (BM / 4) + 8 + trow];
            float4 b0 = Bs4[s][k * (BN / 4) + tcol], b1 = Bs4[s][k * (BN / 4) + 8 + tcol];
            float ra8[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float rb8[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += ra8[i] * rb8[j];
        }
        if (more) stash(s ^ 1);
        __syncthreads();
        s ^= 1;
    }
    for (int i = 0; i < 8; i++) {
        int row = row0 + (i < 4 ? trow * 4 + i : 32 + trow * 4 + i - 4);
        if (row >= M) continue;
        for (int h = 0; h < 2; h++) {
            int col = col0 + 32 * h + tcol * 4;
            if (col < N)
                *reinterpret_cast<float4*>(&C[(size_t)row * N + col]) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}

// cp_async16 copies 16 bytes from global to shared memory without passing
// through registers (cp.async, compute capability 8.0 and newer); when in is
// false it reads nothing and fills the 16 bytes with zeros. Older GPUs copy
// through a register instead, at once, and the commit and wait are no-ops.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool in) {
#if __CUDA_ARCH__ >= 800
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(in ? 16 : 0));
#else
    *reinterpret_cast<float4*>(dst) = in ? *reinterpret_cast<const float4*>(src) : make_float4(0, 0, 0, 0);
#endif
}

// cp_async_commit closes a group of copies; cp_async_wait<N> waits until at
// most N groups are still in flight.
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// v3: 8×4 outputs a thread in blocks of 128 instead of 8×8 in blocks of
// 64, and tiles copied by cp.async, three stages deep (lesson 6's H200
// recording: 40 × 256³ in 41.1 µs against v2's 44.3). The reshape is most
// of the gain: in the H100 session that wrote v3 (docs/measurements.md,
// third session), the 8×4 shape with v2's register staging ran 40 × 256³
// in 41.5–42.0 µs, v3 in 40.8, v2 in 44.4. Launch bounds of (128, 5) ask
// for five blocks an SM (NVRTC 13 gave it 96 registers); lesson 6's Waves
// step asks the driver how many fit (five, on the H200). Needs K and N
// multiples of 4.
extern "C" __global__ void __launch_bounds__(128, 5) matmul_batched_v3(const float* A, const float* B, float* C, int M, int N, int K) {
    const int BM = 64, BN = 64, BK = 16, NT = 128, STAGES = 3, TR = 8;  // TR: rows of threads
    // Tuning notes. While the math reads one stage, cp.async fills the other
    // two straight from global memory: no registers hold the next tile, no
    // stores copy it in, and a tile is requested two rounds before it is
    // used. cp.async cannot transpose, so A stays row-major: a thread reads
    // four k's of one row as a float4, and a warp's reads fall on two
    // adjacent rows, in different banks (the 4-float padding would matter
    // to a warp spanning four rows; this one does not). Three stages take
    // 3 · (64·20 + 16·64) · 4 = 27,648 B of shared memory.
    __shared__ __align__(16) float As[STAGES][BM][BK + 4];
    __shared__ __align__(16) float Bs[STAGES][BK][BN];
    A += (size_t)blockIdx.z * M * K;
    B += (size_t)blockIdx.z * K * N;
    C += (size_t)blockIdx.z * M * N;
    int tid = threadIdx.x;
    int trow = tid / 16, tcol = tid % 16;  // rows trow + 8i, columns 4·tcol..+3
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int tiles = (K + BK - 1) / BK;
    float acc[8][4] = {{0.0f}};

    // load: start copying the tiles at depth t·BK into stage s; float4 i of
    // A's tile is row i/4, and float4 i of B's is row i/16.
    auto load = [&](int t, int s) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 4, c = 4 * (i % 4), gr = row0 + r, gc = t * BK + c;
            bool in = gr < M && gc < K;
            cp_async16(&As[s][r][c], in ? &A[(size_t)gr * K + gc] : A, in);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = tid + NT * h;
            int r = i / 16, c = 4 * (i % 16), gr = t * BK + r, gc = col0 + c;
            bool in = gr < K && gc < N;
            cp_async16(&Bs[s][r][c], in ? &B[(size_t)gr * N + gc] : B, in);
        }
    };

    // Start the first STAGES-1 tiles. Each load is one commit group, empty or
    // not, so that "all but the newest STAGES-2 groups" always means "tile t".
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles) load(s, s);
        cp_async_commit();
    }
    for (int t = 0; t < tiles; t++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // tile t has landed for everyone, and everyone is done with tile t-1
        if (t + STAGES - 1 < tiles) load(t + STAGES - 1, (t + STAGES - 1) % STAGES);  // into tile t-1's stage
        cp_async_commit();
        int s = t % STAGES;
#pragma unroll
        for (int k0 = 0; k0 < BK; k0 += 4) {
            float4 a[8];
#pragma unroll
            for (int i = 0; i < 8; i++) a[i] = *reinterpret_cast<const float4*>(&As[s][trow + TR * i][k0]);
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                float4 b = *reinterpret_cast<const float4*>(&Bs[s][k0 + kk][4 * tcol]);
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    float ai = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
                    acc[i][0] += ai * b.x;
                    acc[i][1] += ai * b.y;
                    acc[i][2] += ai * b.z;
                    acc[i][3] += ai * b.w;
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = row0 + trow + TR * i, col = col0 + 4 * tcol;
        if (row < M && col < N)
            *reinterpret_cast<float4*>(&C[(size_t)row * N + col]) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
}

// v4: the TMA does the copies: one thread asks for a 64×32 tile of A and a
// 32×64 tile of B with two instructions, so the loop is almost only FFMA
// and shared-memory loads (lesson 6's H200 recording: 40 × 256³ in 36.6 µs
// against v3's 41.1). Needs Hopper (kernels compiled for sm_90a), and K
// and N multiples of 4.
extern "C" __global__ void __launch_bounds__(128, 5) matmul_batched_v4(const __grid_constant__ TensorMap mapA, const __grid_constant__ TensorMap mapB, float* C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const int BM = 64, BN = 64, BK = 32, STAGES = 2, TR = 8;  // TR: rows of threads
    // Tuning notes. In the SASS NVRTC 13 made of v3 for sm_90a, 91 of the
    // loop's 675 instructions (for 512 FFMAs) computed each thread's
    // cp.async addresses and bounds; here thread 0 issues the copies, and
    // the loop is 1184 instructions for 1024 FFMAs (docs/measurements.md,
    // fourth session). Tiles are 32 deep, so the barrier and the wait come
    // once every 32 steps of k: two stages take 2 · (64·32 + 32·64) · 4 =
    // 32,768 B of shared memory, against v3's 27,648. The TMA fills what
    // falls outside a matrix with zeros, so the loop checks no bounds.
    const unsigned TILE_BYTES = (BM * BK + BK * BN) * 4;
    __shared__ __align__(128) float As[STAGES][BM * BK];  // row-major, as TMA writes the box
    __shared__ __align__(128) float Bs[STAGES][BK * BN];
    __shared__ __align__(8) unsigned long long full[STAGES];  // stage s has landed
    int tid = threadIdx.x, z = blockIdx.z;
    int trow = tid / 16, tcol = tid % 16;  // rows trow + 8i, columns 4·tcol..+3
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int tiles = (K + BK - 1) / BK;
    unsigned bar0 = (unsigned)__cvta_generic_to_shared(&full[0]);
    float acc[8][4] = {{0.0f}};

    // load: thread 0 starts tile t into its stage; the barrier completes when
    // both boxes' bytes have arrived.
    auto load = [&](int t) {
        int s = t % STAGES;
        unsigned bar = bar0 + 8 * s;
        mbar_expect(bar, TILE_BYTES);
        tma_load3((unsigned)__cvta_generic_to_shared(&As[s][0]), &mapA, t * BK, row0, z, bar);
        tma_load3((unsigned)__cvta_generic_to_shared(&Bs[s][0]), &mapB, col0, t * BK, z, bar);
    };

    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) mbar_init(bar0 + 8 * s, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        load(0);
    }
    for (int t = 0; t < tiles; t++) {
        __syncthreads();  // everyone is done with tile t-1, whose stage tile t+1 takes
        if (tid == 0 && t + 1 < tiles) load(t + 1);
        int s = t % STAGES;
        mbar_wait(bar0 + 8 * s, (t / STAGES) & 1);  // the stage's (t/STAGES)-th fill
        const float* as = As[s];
        const float* bs = Bs[s];
#pragma unroll
        for (int k0 = 0; k0 < BK; k0 += 4) {
            float4 a[8];
#pragma unroll
            for (int i = 0; i < 8; i++) a[i] = *reinterpret_cast<const float4*>(&as[(trow + TR * i) * BK + k0]);
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                float4 b = *reinterpret_cast<const float4*>(&bs[(k0 + kk) * BN + 4 * tcol]);
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    float ai = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
                    acc[i][0] += ai * b.x;
                    acc[i][1] += ai * b.y;
                    acc[i][2] += ai * b.z;
                    acc[i][3] += ai * b.w;
                }
            }
        }
    }
    C += (size_t)z * M * N;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = row0 + trow + TR * i, col = col0 + 4 * tcol;
        if (row < M && col < N)
            *reinterpret_cast<float4*>(&C[(size_t)row * N + col]) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
#endif
}
