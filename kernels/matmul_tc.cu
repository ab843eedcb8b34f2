// Matrix product on tensor cores, C = A·B: A (M×K), B (K×N) and C (M×N) are
// fp16, row-major; products accumulate in fp32. A warp-wide mma.sync
// instruction multiplies a 16×16 tile of A by a 16×8 tile of B in one step:
// the question becomes how fast the operands can reach it. Written in PTX
// (inline asm), so that no CUDA header is needed to compile it.

// smem32 is the 32-bit shared-memory address of p, as ldmatrix and cp.async take it.
static __device__ __forceinline__ unsigned smem32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

// pack2 rounds two floats to fp16 and packs them, lo in the low half.
static __device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// mma16816 is d += a·b for one 16×16 tile of A and 16×8 tile of B, fp32 accumulate.
static __device__ __forceinline__ void mma16816(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// v1: one warp per 16×8 tile of C, each thread gathering its share of the mma
// operands straight from global memory: tensor cores do the math, but every
// operand is fetched by every warp that needs it.
extern "C" __global__ void matmul_tc_v1(const unsigned short* A, const unsigned short* B, unsigned short* C, int M, int N, int K) {
    int lane = threadIdx.x % 32;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tilesN = (N + 7) / 8;
    int m0 = (warp / tilesN) * 16, n0 = (warp % tilesN) * 8;
    if (m0 >= M) return;
    int g = lane / 4, t = lane % 4;  // the fragment layout of m16n8k16
    // at reads an fp16 element, 0 outside the matrix.
    auto at = [](const unsigned short* X, int r, int c, int rows, int cols) -> unsigned {
        return (r < rows && c < cols) ? X[(size_t)r * cols + c] : 0u;
    };
    float d[4] = {0, 0, 0, 0};
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a[4], b[2];
        for (int i = 0; i < 4; i++) {  // a0: (g, 2t) a1: (g+8, 2t) a2: (g, 2t+8) a3: (g+8, 2t+8)
            int r = m0 + g + 8 * (i % 2), c = k0 + 2 * t + 8 * (i / 2);
            a[i] = at(A, r, c, M, K) | at(A, r, c + 1, M, K) << 16;
        }
        for (int i = 0; i < 2; i++) {  // b0: k = 2t, 2t+1; b1: k = 2t+8, 2t+9; n = g
            int r = k0 + 2 * t + 8 * i, c = n0 + g;
            b[i] = at(B, r, c, K, N) | at(B, r + 1, c, K, N) << 16;
        }
        mma16816(d, a, b);
    }
    for (int h = 0; h < 2; h++) {  // d0,d1: row g; d2,d3: row g+8; columns 2t, 2t+1
        int r = m0 + g + 8 * h, c = n0 + 2 * t;
        unsigned v = pack2(d[2 * h], d[2 * h + 1]);
        if (r < M && c < N) C[(size_t)r * N + c] = v & 0xffff;
        if (r < M && c + 1 < N) C[(size_t)r * N + c + 1] = v >> 16;
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
