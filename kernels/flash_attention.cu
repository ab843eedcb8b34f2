// Flash attention, forward: O = softmax(scale·Q·Kᵀ)·V for every head, with
// the S×S scores never written to memory. Q, K, V and O are [B·H][S][d]
// row-major, one head after another; blockIdx.y picks the head.
//
// The trick is lesson 12's online softmax, carried into the product with V.
// Walk the keys in tiles. Keep, for each query, the largest score seen so
// far m, the sum of exp(score − m) so far l, and the output so far o, a
// weighted sum of rows of V not yet divided by l. When a tile brings a
// larger maximum m', everything so far was weighted against the old one:
// multiply l and o by exp(m − m') and go on. At the end, o / l is the
// output. Each query reads every key and value once, and nothing of size
// S×S exists anywhere.

#define NEG_INF __int_as_float(0xff800000)  // −∞: the max of nothing, and exp(−∞) = 0

// v1: the idea in its plainest form, in fp32: a thread per query, holding
// its row of Q and of the output in registers, while the block's 64 threads
// stage tiles of 64 keys and values in shared memory and each thread walks
// them one key at a time. d ≤ 64; not causal.
extern "C" __global__ void __launch_bounds__(64) flash_v1(const float* Q, const float* K, const float* V, float* O, int S, int d, float scale) {
    const int TILE = 64, DMAX = 64;
    __shared__ float Ks[TILE][DMAX];
    __shared__ float Vs[TILE][DMAX];
    long long head = (long long)blockIdx.y * S * d;
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // this thread's query
    bool active = i < S;
    float q[DMAX], o[DMAX];
#pragma unroll
    for (int c = 0; c < DMAX; c++) {
        q[c] = active && c < d ? Q[head + (long long)i * d + c] * scale : 0.0f;
        o[c] = 0.0f;
    }
    float m = NEG_INF, l = 0.0f;
    for (int j0 = 0; j0 < S; j0 += TILE) {
        int n = min(TILE, S - j0);  // keys in this tile: the last may be short
        __syncthreads();            // everyone is done with the previous tile
        for (int e = threadIdx.x; e < n * d; e += blockDim.x) {
            Ks[e / d][e % d] = K[head + (long long)j0 * d + e];
            Vs[e / d][e % d] = V[head + (long long)j0 * d + e];
        }
        __syncthreads();
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
#pragma unroll
            for (int c = 0; c < DMAX; c++) s += c < d ? q[c] * Ks[j][c] : 0.0f;
            float mNew = fmaxf(m, s);
            float corr = __expf(m - mNew);  // what the old weights are worth now; 0 the first time
            float p = __expf(s - mNew);
            l = l * corr + p;
#pragma unroll
            for (int c = 0; c < DMAX; c++) o[c] = o[c] * corr + (c < d ? p * Vs[j][c] : 0.0f);
            m = mNew;
        }
    }
    if (!active) return;
    for (int c = 0; c < d; c++) O[head + (long long)i * d + c] = o[c] / l;
}

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

// mma16816 is d += a·b for a 16×16 tile of A and a 16×8 tile of B on the
// tensor cores, fp16 in, fp32 accumulate.
static __device__ __forceinline__ void mma16816(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

static __device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// flash_v2_tile is flash_v2 for head dimension D: see below.
template <int D>
__device__ __forceinline__ void flash_v2_tile(const unsigned short* Q, const unsigned short* K, const unsigned short* V, unsigned short* O,
                                              int S, float scale, int causal, unsigned short* smem) {
    const int BR = 64, BC = 64, ST = D + 8;  // 64 queries, 64 keys a tile; rows padded by 16 bytes
    const int CHUNKS = D / 8;                // 16-byte chunks in a row
    unsigned short* Qs = smem;               // [BR][ST]
    unsigned short* Ks = Qs + BR * ST;       // [2][BC][ST]
    unsigned short* Vs = Ks + 2 * BC * ST;   // [2][BC][ST]
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    int g = lane / 4, t = lane % 4;  // the rows and columns of the mma fragments this lane holds
    long long head = (long long)blockIdx.y * S * D;
    int q0 = blockIdx.x * BR;

    // copy issues cp.async copies of rows [r0, r0 + rows) of X into Xs,
    // zero-filling the rows past S.
    auto copy = [&](unsigned short* Xs, const unsigned short* X, int r0, int rows) {
        for (int c = tid; c < rows * CHUNKS; c += blockDim.x) {
            int r = c / CHUNKS, k = (c % CHUNKS) * 8;
            bool in = r0 + r < S;
            const unsigned short* src = in ? X + head + (long long)(r0 + r) * D + k : X;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem32(&Xs[r * ST + k])), "l"(src), "r"(in ? 16 : 0));
        }
    };
    int tiles = (S + BC - 1) / BC;
    if (causal) tiles = min(tiles, (q0 + BR + BC - 1) / BC);  // no key past the block's last query
    copy(Qs, Q, q0, BR);
    copy(Ks, K, 0, BC);
    copy(Vs, V, 0, BC);
    asm volatile("cp.async.commit_group;");

    const float sl2 = scale * 1.4426950408889634f;  // scores in log2 units, for ex2
    unsigned qf[D / 16][4];                          // this warp's 16 rows of Q as A fragments
    float o[D / 8][4] = {{0}};                       // its 16×D of the output, fp32
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0, 0};  // rows g and g + 8: max (log2 units) and this lane's part of the sum
    int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};

    for (int kt = 0; kt < tiles; kt++) {
        int s = kt & 1;
        if (kt + 1 < tiles) {
            copy(Ks + (s ^ 1) * BC * ST, K, (kt + 1) * BC, BC);  // in flight during the math below
            copy(Vs + (s ^ 1) * BC * ST, V, (kt + 1) * BC, BC);
            asm volatile("cp.async.commit_group;");
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncthreads();  // tile kt (and Q) have landed for every thread
        if (kt == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                int r = warp * 16 + lane % 16, c = kk * 16 + (lane / 16) * 8;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(qf[kk][0]), "=r"(qf[kk][1]), "=r"(qf[kk][2]), "=r"(qf[kk][3])
                             : "r"(smem32(&Qs[r * ST + c])));
            }
        }
        const unsigned short* Kt = Ks + s * BC * ST;
        const unsigned short* Vt = Vs + s * BC * ST;

        // The warp's 16×64 scores, Q·Kᵀ: K's rows, read as they are, are
        // the column-major B operand the mma takes.
        float sc[BC / 8][4] = {{0}};
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
            for (int nj = 0; nj < BC / 16; nj++) {
                unsigned b[4];
                int r = nj * 16 + lane % 8 + (lane / 16) * 8, c = kk * 16 + ((lane / 8) % 2) * 8;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                             : "r"(smem32(&Kt[r * ST + c])));
                mma16816(sc[2 * nj], qf[kk], b);
                mma16816(sc[2 * nj + 1], qf[kk], b + 2);
            }
        }
        // Scale, mask the keys past S (and, causal, past the query), and
        // take each row's new max across the 4 lanes that share the row.
        int j0 = kt * BC;
        bool mask = j0 + BC > S || (causal && j0 + BC - 1 > q0 + warp * 16);
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int ni = 0; ni < BC / 8; ni++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int h = e / 2, j = j0 + ni * 8 + 2 * t + e % 2;
                float v = sc[ni][e] * sl2;
                if (mask && (j >= S || (causal && j > row[h]))) v = NEG_INF;
                sc[ni][e] = v;
                mx[h] = fmaxf(mx[h], v);
            }
        }
        float corr[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            float base = mx[h] == NEG_INF ? 0.0f : mx[h];  // a row with nothing seen yet stays at 0
            corr[h] = exp2_approx(m[h] - base);
            m[h] = mx[h];
            l[h] *= corr[h];
        }
        // P = exp2(s − m), kept in registers: the accumulator layout of two
        // neighbouring 16×8 tiles is the A-operand layout of one 16×16, so
        // P goes into the next product without leaving the registers.
        unsigned pf[BC / 16][4];
#pragma unroll
        for (int ni = 0; ni < BC / 8; ni++) {
            float p[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int h = e / 2;
                p[e] = exp2_approx(sc[ni][e] - (m[h] == NEG_INF ? 0.0f : m[h]));
                l[h] += p[e];
            }
            pf[ni / 2][(ni % 2) * 2] = pack2(p[0], p[1]);
            pf[ni / 2][(ni % 2) * 2 + 1] = pack2(p[2], p[3]);
        }
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            o[dn][0] *= corr[0];
            o[dn][1] *= corr[0];
            o[dn][2] *= corr[1];
            o[dn][3] *= corr[1];
        }
        // O += P·V: V's rows are the row-major B operand, read transposed.
#pragma unroll
        for (int kc = 0; kc < BC / 16; kc++) {
#pragma unroll
            for (int dj = 0; dj < D / 16; dj++) {
                unsigned b[4];
                int r = kc * 16 + lane % 16, c = dj * 16 + (lane / 16) * 8;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                             : "r"(smem32(&Vt[r * ST + c])));
                mma16816(o[2 * dj], pf[kc], b);
                mma16816(o[2 * dj + 1], pf[kc], b + 2);
            }
        }
        __syncthreads();  // everyone is done with stage s before it is loaded again
    }
    // The sum of a row is split over its 4 lanes; add the parts, divide.
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        if (row[h] >= S) continue;
        float inv = 1.0f / l[h];
        unsigned* out = reinterpret_cast<unsigned*>(O + head + (long long)row[h] * D);
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) out[(dn * 8 + 2 * t) / 2] = pack2(o[dn][2 * h] * inv, o[dn][2 * h + 1] * inv);
    }
}

// v2: fp16 on the tensor cores, the FlashAttention-2 scheme: a block of 4
// warps takes 64 queries, each warp 16 of them, and walks the keys in
// tiles of 64, staged in shared memory by cp.async two tiles deep so the
// next arrives during the math. Q·Kᵀ and P·V are mma.sync instructions
// fed by ldmatrix; the scores, their softmax and the output stay in
// registers, in fp32. d = 64; causal or not.
extern "C" __global__ void __launch_bounds__(128) flash_v2(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                           unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<64>(Q, K, V, O, S, scale, causal, smem);
}

// flash_v2_d128 is v2 for d = 128, launched in its place there: a kernel
// of its own, since a kernel's registers are those of its hungriest path,
// and d = 128 needs far more (221 a thread, against 135 at d = 64, which
// lets three blocks share an SM instead of two).
extern "C" __global__ void __launch_bounds__(128) flash_v2_d128(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                                unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<128>(Q, K, V, O, S, scale, causal, smem);
}
