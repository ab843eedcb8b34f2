// Matrix product on tensor cores, C = A·B: A (M×K), B (K×N) and C (M×N) are
// fp16, row-major; products accumulate in fp32. A warp-wide mma.sync
// instruction multiplies a 16×16 tile of A by a 16×8 tile of B in one step:
// the question becomes how fast the operands can reach it. Written in PTX
// (inline asm), so that no CUDA toolkit header is needed to compile it; the
// helpers it shares with other kernel files are in cudarepl.cuh.

#include "cudarepl.cuh"

// v1: WMMA, the warp-wide matrix API: a warp stages a 16×16 tile of A and
// one of B in shared memory (zeros outside the matrices) and multiplies them
// with one wmma.mma, accumulating its 16×16 tile of C in fp32. Tensor cores
// do the math; every warp still fetches every operand it uses itself.
extern "C" __global__ void __launch_bounds__(128) matmul_tc_v1(const unsigned short* A, const unsigned short* B, unsigned short* C, int M, int N, int K) {
    __shared__ __align__(32) unsigned short As[4][16 * 16], Bs[4][16 * 16];
    __shared__ __align__(32) float Cs[4][16 * 16];
    int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    int tile = blockIdx.x * 4 + w, tilesN = (N + 15) / 16;
    int m0 = (tile / tilesN) * 16, n0 = (tile % tilesN) * 16;
    if (m0 >= M) return;  // the whole warp leaves together
    float d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = lane; i < 256; i += 32) {  // row i/16, column i%16 of each tile
            int r = i / 16, c = i % 16;
            As[w][i] = (m0 + r < M && k0 + c < K) ? A[(size_t)(m0 + r) * K + k0 + c] : 0;
            Bs[w][i] = (k0 + r < K && n0 + c < N) ? B[(size_t)(k0 + r) * N + n0 + c] : 0;
        }
        __syncwarp();
        unsigned a[8], b[8];
        asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], 16;"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]), "=r"(a[4]), "=r"(a[5]), "=r"(a[6]), "=r"(a[7])
                     : "r"(smem32(As[w])));
        asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], 16;"
                     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]), "=r"(b[4]), "=r"(b[5]), "=r"(b[6]), "=r"(b[7])
                     : "r"(smem32(Bs[w])));
        asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
                     "{%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19,%20,%21,%22,%23}, {%0,%1,%2,%3,%4,%5,%6,%7};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
                       "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
        __syncwarp();  // every lane is done with the tiles before they are refilled
    }
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, 16;"
                 ::"r"(smem32(Cs[w])), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]), "f"(d[4]), "f"(d[5]), "f"(d[6]), "f"(d[7])
                 : "memory");
    __syncwarp();
    for (int i = lane; i < 256; i += 32) {
        int r = m0 + i / 16, c = n0 + i % 16;
        if (r < M && c < N) C[(size_t)r * N + c] = pack2(Cs[w][i], 0) & 0xffff;
    }
}

// v2: a block stages 128×32 tiles of A and 32×128 of B in shared memory with
// cp.async, two stages deep so the next tiles arrive while the current ones
// are used; ldmatrix hands each warp its fragments in one instruction, and
// rows padded by 16 bytes keep its reads free of bank conflicts. Eight warps
// each compute a 32×64 tile of C. Needs K and N to be multiples of 8.
extern "C" __global__ void __launch_bounds__(256) matmul_tc_v2(const unsigned short* A, const unsigned short* B, unsigned short* C, int M, int N, int K) {
    const int BM = 128, BN = 128, BK = 32, AS = BK + 8, BS = BN + 8;  // padded row strides, in halves
    __shared__ __align__(16) unsigned short As[2][BM * AS];
    __shared__ __align__(16) unsigned short Bs[2][BK * BS];
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    int wm = warp / 2, wn = warp % 2;  // this warp's 32×64 tile
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    // load issues the copies of the tiles at depth k0 into stage s, zero-filling
    // outside the matrices (16-byte chunks: 8 halves).
    auto load = [&](int k0, int s) {
        for (int h = 0; h < 2; h++) {
            int c = tid + 256 * h;
            int r = c / 4, kc = (c % 4) * 8;  // A: 128 rows × 4 chunks
            bool in = row0 + r < M && k0 + kc < K;
            const unsigned short* src = in ? &A[(size_t)(row0 + r) * K + k0 + kc] : A;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem32(&As[s][r * AS + kc])), "l"(src), "r"(in ? 16 : 0));
            r = c / 16;
            int nc = (c % 16) * 8;  // B: 32 rows × 16 chunks
            in = k0 + r < K && col0 + nc < N;
            src = in ? &B[(size_t)(k0 + r) * N + col0 + nc] : B;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem32(&Bs[s][r * BS + nc])), "l"(src), "r"(in ? 16 : 0));
        }
        asm volatile("cp.async.commit_group;");
    };

    float d[2][8][4] = {{{0}}};
    int tiles = (K + BK - 1) / BK;
    load(0, 0);
    for (int kt = 0; kt < tiles; kt++) {
        int s = kt & 1;
        if (kt + 1 < tiles) {
            load((kt + 1) * BK, s ^ 1);  // in flight during the math below
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncthreads();  // stage s has landed for every thread
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[2][4], b[8][2];
            for (int mi = 0; mi < 2; mi++) {
                int r = wm * 32 + mi * 16 + lane % 16, c = kk + (lane / 16) * 8;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(a[mi][0]), "=r"(a[mi][1]), "=r"(a[mi][2]), "=r"(a[mi][3])
                             : "r"(smem32(&As[s][r * AS + c])));
            }
            for (int nj = 0; nj < 4; nj++) {  // two 8-wide fragments of B per ldmatrix
                int r = kk + lane % 16, c = wn * 64 + nj * 16 + (lane / 16) * 8;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(b[2 * nj][0]), "=r"(b[2 * nj][1]), "=r"(b[2 * nj + 1][0]), "=r"(b[2 * nj + 1][1])
                             : "r"(smem32(&Bs[s][r * BS + c])));
            }
            for (int mi = 0; mi < 2; mi++)
                for (int ni = 0; ni < 8; ni++) mma16816(d[mi][ni], a[mi], b[ni]);
        }
        __syncthreads();  // everyone is done with stage s before it is loaded again
    }
    int g = lane / 4, t = lane % 4;
    for (int mi = 0; mi < 2; mi++)
        for (int ni = 0; ni < 8; ni++)
            for (int h = 0; h < 2; h++) {
                int r = row0 + wm * 32 + mi * 16 + g + 8 * h, c = col0 + wn * 64 + ni * 8 + 2 * t;
                if (r < M && c < N)  // N % 8 == 0: both halves are in
                    *reinterpret_cast<unsigned*>(&C[(size_t)r * N + c]) = pack2(d[mi][ni][2 * h], d[mi][ni][2 * h + 1]);
            }
}

// Hopper (sm_90a) only: the tensor memory accelerator (TMA) copies whole tiles
// between global and shared memory on its own, and wgmma, a warpgroup-wide
// (4 warps) asynchronous instruction, reads both operands straight from
// shared memory. The tiles are stored 128-byte swizzled: the 16-byte chunk j
// of row r sits at chunk j XOR (r mod 8), which TMA writes and wgmma reads
// without bank conflicts. Shared-memory descriptors tell wgmma that layout.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// wgmma64x256 is d += a·b for a 64×16 tile of A (K-major) and a 16×256 tile
// of B (N-major, hence the transpose flag), fp32 accumulate; T is f16 or bf16.
#define WGMMA_64x256(T)                                                                          \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %130, 0;\n"                                    \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." T "." T " {" WG_R128 "}, "       \
                 "%128, %129, p, 1, 1, 0, 1; }"                                                  \
                 : WG_F128 : "l"(da), "l"(db), "r"(1))

template <bool BF16>
static __device__ __forceinline__ void wgmma64x256(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF16) WGMMA_64x256("bf16");
    else WGMMA_64x256("f16");
}

// pack2as rounds two floats to fp16 or bf16 and packs them, lo in the low half.
template <bool BF16>
static __device__ __forceinline__ unsigned pack2as(float lo, float hi) {
    unsigned r;
    if constexpr (BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// grouped_tile turns a block's place in the grid, counted x first, into the
// tile of C it computes, row tm and column tn of tiles, taken in groups of
// group tile rows: down the group's rows column by column, then on to the
// next group. Blocks that start together then cover a band of group rows a
// few columns wide, where the grid's own order covers whole rows of tiles,
// right across C. CUDA promises no order in which blocks start.
static __device__ __forceinline__ void grouped_tile(int group, unsigned& tm, unsigned& tn) {
    int tilesM = gridDim.y, tilesN = gridDim.x;
    int b = blockIdx.y * tilesN + blockIdx.x;  // the block's place, x first
    int first = b / (group * tilesN) * group;  // its group's first tile row
    int rows = min(group, tilesM - first);     // the last group may have fewer
    int i = b - first * tilesN;                // its place within the group
    tm = first + i % rows;
    tn = i / rows;
}

// tc_v3 is matmul_tc_v3 for fp16 or bf16: see its comment. A group above 0
// takes the block's tile in groups of that many tile rows (grouped_tile), as
// matmul_tc_v3_grouped does; 0 takes the tile the block's place names.
template <bool BF16>
static __device__ __forceinline__ void tc_v3(const TensorMap& mapA, const TensorMap& mapB, unsigned short* C, int M, int N, int K, int group = 0) {
    const int BM = 128, BN = 256, BK = 64, STAGES = 4;
    const unsigned A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, B_CHUNK = BK * 64 * 2;
    extern __shared__ unsigned char smem_raw[];
    unsigned base = (smem32(smem_raw) + 1023) & ~1023u;  // swizzled tiles start on 1024-byte boundaries
    unsigned sA = base, sB = base + STAGES * A_BYTES;
    unsigned full = sB + STAGES * B_BYTES, empty = full + 8 * STAGES;  // mbarriers, 8 bytes each
    int tid = threadIdx.x, wg = tid / 128;
    unsigned tm = blockIdx.y, tn = blockIdx.x;  // the block's tile of C, in tiles
    if (group > 0) grouped_tile(group, tm, tn);
    int row0 = tm * BM, col0 = tn * BN;
    int tiles = (K + BK - 1) / BK;

    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + 8 * s, 1);      // the producer's arrive; TMA's bytes complete it
            mbar_init(empty + 8 * s, 256);   // every consumer thread is done reading
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // producer: one thread keeps STAGES tiles in flight
        if (tid == 0) {
            for (int kt = 0; kt < tiles; kt++) {
                int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(empty + 8 * s, ((kt / STAGES) & 1) ^ 1);
                mbar_expect(full + 8 * s, A_BYTES + B_BYTES);
                tma_load(sA + s * A_BYTES, &mapA, kt * BK, row0, full + 8 * s);
                for (int j = 0; j < BN / 64; j++)
                    tma_load(sB + s * B_BYTES + j * B_CHUNK, &mapB, col0 + 64 * j, kt * BK, full + 8 * s);
            }
        }
        return;
    }

    // consumers: warpgroup 1 computes rows 0–63 of the tile, warpgroup 2 rows 64–127.
    float d[128];
    for (int i = 0; i < 128; i++) d[i] = 0;
    for (int kt = 0; kt < tiles; kt++) {
        int s = kt % STAGES;
        mbar_wait(full + 8 * s, (kt / STAGES) & 1);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (int kk = 0; kk < BK / 16; kk++) {
            // A: 64 rows of 128 bytes from row 64·(wg−1); 16 more of K is 32 bytes on.
            unsigned long long da = desc128(sA + s * A_BYTES + (wg - 1) * 64 * 128 + kk * 32, 16, 1024);
            // B: 64-column chunks 8 KiB apart (lead, along N), 8-row groups 1 KiB apart
            // (stride, along K); 16 more rows of K is 2 KiB on.
            unsigned long long db = desc128(sB + s * B_BYTES + kk * 2048, B_CHUNK, 1024);
            wgmma64x256<BF16>(d, da, db);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        mbar_arrive(empty + 8 * s);  // this stage may be refilled
    }

    // d holds, per 8 columns j, rows g and g+8 (g = lane/4) of this warp's 16, columns 2·(lane%4) and +1.
    int t = tid % 128, lane = t % 32;
    int r = row0 + (wg - 1) * 64 + (t / 32) * 16 + lane / 4;
    for (int j = 0; j < BN / 8; j++) {
        int c = col0 + 8 * j + 2 * (lane % 4);
        if (c >= N) break;  // N % 8 == 0: both halves are in
        if (r < M) *reinterpret_cast<unsigned*>(&C[(size_t)r * N + c]) = pack2as<BF16>(d[4 * j], d[4 * j + 1]);
        if (r + 8 < M) *reinterpret_cast<unsigned*>(&C[(size_t)(r + 8) * N + c]) = pack2as<BF16>(d[4 * j + 2], d[4 * j + 3]);
    }
}
#endif

// v3: Hopper's own path: TMA copies 128×64 tiles of A and 64×256 of B into
// four shared-memory stages while two warpgroups multiply with wgmma, each a
// 64×256 tile of C; one producer thread and mbarriers keep the copies ahead
// of the math, so no thread spends instructions on loads. Needs sm_90a, and
// K and N multiples of 8 (TMA's 16-byte rows).
extern "C" __global__ void __launch_bounds__(384, 1) matmul_tc_v3(const __grid_constant__ TensorMap mapA, const __grid_constant__ TensorMap mapB, unsigned short* C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    tc_v3<false>(mapA, mapB, C, M, N, K);
#endif
}

// matmul_tc_v3_grouped is matmul_tc_v3 taking its tiles in groups of 16 tile
// rows, column by column within a group (grouped_tile): the blocks running
// at one time share rows of A and columns of B, which L2 may then serve
// instead of DRAM. At 8192³ on the H200 (lesson 5's steps "Tile order,
// timed" and "Tile-order counters") it ran at 1.07 (0.96–1.07) times
// matmul_tc_v3's speed, the median of 3 rounds' ratios and their range: a
// range across 1.0, in a run whose SM clock swung 1425–1980 MHz under the
// power cap, shows no difference. Nsight Compute counted 1243.4 MB read
// from DRAM for it, against 3562.3 MB for matmul_tc_v3.
extern "C" __global__ void __launch_bounds__(384, 1) matmul_tc_v3_grouped(const __grid_constant__ TensorMap mapA, const __grid_constant__ TensorMap mapB, unsigned short* C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    tc_v3<false>(mapA, mapB, C, M, N, K, 16);
#endif
}

// matmul_tc_v3_bf16 is matmul_tc_v3 on bf16 inputs and output.
extern "C" __global__ void __launch_bounds__(384, 1) matmul_tc_v3_bf16(const __grid_constant__ TensorMap mapA, const __grid_constant__ TensorMap mapB, unsigned short* C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    tc_v3<true>(mapA, mapB, C, M, N, K);
#endif
}
