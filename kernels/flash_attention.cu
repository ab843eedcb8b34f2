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

#include "cudarepl.cuh"

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

// flash_v1_causal is v1 made causal, with the key tiles walked as
// FlashAttention-2 walks a causal block's: from the last the block needs
// (the one holding its last query) back to the first, so that the tiles
// that cross the diagonal, the only ones that need the mask, come first. A
// block is 128 queries, a thread each, and a tile 64 keys, so where a
// block's queries reach past its first 64, the first tile walked holds no
// key that those 64 may see: their running max is still −∞ after it, and
// the update must not compute exp(−∞ − (−∞)), which is NaN. Without
// causal every tile is walked, unmasked. d ≤ 64.
extern "C" __global__ void __launch_bounds__(128) flash_v1_causal(const float* Q, const float* K, const float* V, float* O, int S, int d, float scale,
                                                                  int causal) {
    const int TILE = 64, DMAX = 64;
    __shared__ float Ks[TILE][DMAX];
    __shared__ float Vs[TILE][DMAX];
    long long head = (long long)blockIdx.y * S * d;
    int q0 = blockIdx.x * blockDim.x, i = q0 + threadIdx.x;  // the block's first query, and this thread's
    bool active = i < S;
    float q[DMAX], o[DMAX];
#pragma unroll
    for (int c = 0; c < DMAX; c++) {
        q[c] = active && c < d ? Q[head + (long long)i * d + c] * scale : 0.0f;
        o[c] = 0.0f;
    }
    int end = causal ? min(S, q0 + (int)blockDim.x) : S;  // no key past the block's last query
    float m = NEG_INF, l = 0.0f;
    for (int j0 = (end - 1) / TILE * TILE; j0 >= 0; j0 -= TILE) {
        int n = min(TILE, end - j0);  // keys in this tile: the first walked may be short
        __syncthreads();              // everyone is done with the previous tile
        for (int e = threadIdx.x; e < n * d; e += blockDim.x) {
            Ks[e / d][e % d] = K[head + (long long)j0 * d + e];
            Vs[e / d][e % d] = V[head + (long long)j0 * d + e];
        }
        __syncthreads();
        bool diagonal = causal && j0 + n - 1 > q0;  // the tile holds a key after one of the block's queries
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
#pragma unroll
            for (int c = 0; c < DMAX; c++) s += c < d ? q[c] * Ks[j][c] : 0.0f;
            if (diagonal && j0 + j > i) s = NEG_INF;  // a key after the query
            float mNew = fmaxf(m, s);
            float base = mNew == NEG_INF ? 0.0f : mNew;  // nothing seen yet: every weight so far is 0, and this one too
            float corr = __expf(m - base);
            float p = __expf(s - base);
            l = l * corr + p;
#pragma unroll
            for (int c = 0; c < DMAX; c++) o[c] = o[c] * corr + (c < d ? p * Vs[j][c] : 0.0f);
            m = mNew;
        }
    }
    if (!active) return;
    for (int c = 0; c < d; c++) O[head + (long long)i * d + c] = o[c] / l;
}

static __device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// mask_scores sets to −∞ the scores of a tile of BC keys from j0 that a
// query may not see: keys past S, and with causal, keys after the query.
// Rows and columns are those of online_softmax, below; row is row g's query.
// Only a tile that holds such a key needs it: its callers test first, with
// tile_masked.
template <int BC>
static __device__ __forceinline__ void mask_scores(float* sc, int j0, int S, int causal, int row, int c2) {
#pragma unroll
    for (int i = 0; i < BC / 2; i++) {
        int h = (i / 2) % 2, j = j0 + 8 * (i / 4) + c2 + i % 2;
        if (j >= S || (causal && j > row + 8 * h)) sc[i] = NEG_INF;
    }
}

// tile_masked reports whether the tile of BC keys from j0 holds a key that
// a query from r0 on may not see: one past S, or with causal, one after r0.
template <int BC>
static __device__ __forceinline__ bool tile_masked(int j0, int S, int causal, int r0) {
    return j0 + BC > S || (causal && j0 + BC - 1 > r0);
}

// online_softmax is the online softmax of v2 and v3 on a warp's 16 rows of
// scores against a tile of BC keys, laid out as mma.sync's accumulators:
// sc[i] is row g + 8·((i/2) % 2), column 8·(i/4) + c2 + i % 2. The caller
// has masked the scores (mask_scores) where the tile needs it. It moves the
// running max m (in log2 units, scaled) on, and this lane's part of the sum
// l unless l is null (v2 has the tensor cores sum the rows, the steps
// before it and v3 add); it leaves
// P = exp2(scale·s − m) in pf as fp16 (the accumulator layout of two
// neighbouring 16×8 tiles is the A-operand layout of one 16×16, so P goes
// into the next product without leaving the registers), and in corr what
// the output so far must be multiplied by. The scale rides in the
// exponent's FMA, so each score costs a max, an FMA and an exponential,
// and an add for l.
template <int BC>
static __device__ __forceinline__ void online_softmax(float* sc, unsigned (*pf)[4], float* corr, float* m, float* l, float sl2) {
    float mx[2] = {NEG_INF, NEG_INF};
#pragma unroll
    for (int i = 0; i < BC / 2; i++) mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], sc[i]);
    float base[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        mx[h] = fmaxf(m[h], mx[h] * sl2);           // the scale is positive, so it commutes with the max
        base[h] = mx[h] == NEG_INF ? 0.0f : mx[h];  // a row with nothing seen yet stays at 0
        corr[h] = exp2_approx(m[h] - base[h]);
        m[h] = mx[h];
        if (l) l[h] *= corr[h];
    }
#pragma unroll
    for (int i = 0; i < BC / 2; i += 2) {
        int h = (i / 2) % 2;
        float p0 = exp2_approx(fmaf(sc[i], sl2, -base[h])), p1 = exp2_approx(fmaf(sc[i + 1], sl2, -base[h]));
        if (l) l[h] += p0 + p1;
        sc[i] = p0, sc[i + 1] = p1;
    }
    // P is rounded once every exponential is done, not as each comes: that
    // order measured faster in v3 (see docs/measurements.md).
#pragma unroll
    for (int i = 0; i < BC / 2; i += 2) pf[i / 8][(i / 2) % 4] = pack2(sc[i], sc[i + 1]);
}

// rescale_rows multiplies a warp's output so far, laid out as sc, by corr.
template <int D>
static __device__ __forceinline__ void rescale_rows(float* o, const float* corr) {
#pragma unroll
    for (int i = 0; i < D / 2; i++) o[i] *= corr[(i / 2) % 2];
}

// store_rows divides the output rows g and g + 8 by their sums, sum[0] and
// sum[1], and writes those before S to Oh, the head's output, as fp16.
template <int D>
static __device__ __forceinline__ void store_rows(unsigned short* Oh, const float* o, const float* sum, int S, int r0, int g, int c2) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int row = r0 + g + 8 * h;
        if (row >= S) continue;
        float inv = 1.0f / sum[h];
        unsigned* out = reinterpret_cast<unsigned*>(Oh + (long long)row * D);
#pragma unroll
        for (int j = 0; j < D / 8; j++) out[(8 * j + c2) / 2] = pack2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    }
}

// copy_rows copies ROWS rows of D halves from X, of which only the first
// left exist, to the shared-memory address dst, rows ST halves apart; the
// rows that do not exist are filled with zeros. The 128 threads of the
// block each take the chunk of 16 bytes at their place in every
// (128/(D/8))-th row. With ASYNC each chunk is a cp.async, which the
// caller commits and waits for; without, a load into registers and a
// store to shared memory, done when copy_rows returns. The thread count
// and the shapes are constants, so each copy is one instruction at a fixed
// offset, and a full tile, the usual case, needs no test at all.
template <int ROWS, int D, int ST, bool ASYNC>
static __device__ __forceinline__ void copy_rows(unsigned dst, const unsigned short* X, int left, int tid) {
    const int CHUNKS = D / 8, STEP = 128 / CHUNKS;  // 16-byte chunks a row; rows the block covers at once
    int r = tid / CHUNKS, k = (tid % CHUNKS) * 8;
    dst += (r * ST + k) * 2;
    const unsigned short* src = X + r * D + k;
    if constexpr (!ASYNC) {
#pragma unroll
        for (int i = 0; i < ROWS / STEP; i++) {
            uint4 v = {0u, 0u, 0u, 0u};
            if (left >= ROWS || r + i * STEP < left) v = *reinterpret_cast<const uint4*>(src + i * STEP * D);
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(dst + i * STEP * ST * 2), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                         : "memory");
        }
    } else if (left >= ROWS) {
#pragma unroll
        for (int i = 0; i < ROWS / STEP; i++)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + i * STEP * ST * 2), "l"(src + i * STEP * D));
    } else {
#pragma unroll
        for (int i = 0; i < ROWS / STEP; i++) {
            bool in = r + i * STEP < left;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst + i * STEP * ST * 2), "l"(in ? src + i * STEP * D : X),
                         "r"(in ? 16 : 0));
        }
    }
}

// ldsm4 loads four 8×8 tiles of halves from shared memory, lane l giving
// the address of row l % 8 of tile l / 8; ldsm4t loads them transposed.
static __device__ __forceinline__ void ldsm4(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
static __device__ __forceinline__ void ldsm4t(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// lds32 loads the word at the shared-memory address addr; lds16x2 packs
// the halves at lo and hi into one word, lo in the low half.
static __device__ __forceinline__ unsigned lds32(unsigned addr) {
    unsigned r;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r) : "r"(addr));
    return r;
}
static __device__ __forceinline__ unsigned lds16x2(unsigned lo, unsigned hi) {
    unsigned short a, b;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(a) : "r"(lo));
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(b) : "r"(hi));
    return a | (unsigned)b << 16;
}

// frag_q, frag_k and frag_v load mma.sync operands for a 16×16 block of
// halves at the shared-memory address addr, rows ST halves apart, addr
// already holding the lane's part (laneQ, laneK and laneV in flash_v2_tile).
// With LDSM each is one ldmatrix, every lane giving the address of one row
// of an 8×8 quarter. Without, each lane loads the words it holds itself,
// from its row g and column 2t: frag_q the A operand of Q (r[0] rows g,
// columns 2t and 2t + 1; r[1] 8 rows on; r[2] 8 columns on; r[3] both);
// frag_k two B operands of Kᵀ, keys 0–7 (r[0], r[1] 8 columns on) and keys
// 8–15 (r[2], r[3]); frag_v two B operands of V, whose words each pair the
// halves of two keys, so eight half loads: r[0] keys 2t and 2t + 1 of
// column g, r[1] 8 keys on, r[2] and r[3] 8 columns on.
template <int ST, bool LDSM>
static __device__ __forceinline__ void frag_q(unsigned* r, unsigned addr) {
    const unsigned ROW8 = 8 * ST * 2;  // bytes from a row to the row 8 below it
    if constexpr (LDSM)
        ldsm4(r, addr);
    else
        r[0] = lds32(addr), r[1] = lds32(addr + ROW8), r[2] = lds32(addr + 16), r[3] = lds32(addr + ROW8 + 16);
}
template <int ST, bool LDSM>
static __device__ __forceinline__ void frag_k(unsigned* r, unsigned addr) {
    const unsigned ROW8 = 8 * ST * 2;
    if constexpr (LDSM)
        ldsm4(r, addr);
    else
        r[0] = lds32(addr), r[1] = lds32(addr + 16), r[2] = lds32(addr + ROW8), r[3] = lds32(addr + ROW8 + 16);
}
template <int ST, bool LDSM>
static __device__ __forceinline__ void frag_v(unsigned* r, unsigned addr) {
    const unsigned ROW = ST * 2, ROW8 = 8 * ROW;
    if constexpr (LDSM) {
        ldsm4t(r, addr);
    } else {
        r[0] = lds16x2(addr, addr + ROW), r[1] = lds16x2(addr + ROW8, addr + ROW8 + ROW);
        r[2] = lds16x2(addr + 16, addr + ROW + 16), r[3] = lds16x2(addr + ROW8 + 16, addr + ROW8 + ROW + 16);
    }
}

// flash_v2_tile is the tile code of v2 and of the steps that lead to it
// from v1 (the kernels after it in this file), for head dimension D, each
// warp taking MT tiles of 16 queries. Each step switches one thing on: LDSM, the
// fragments loaded by ldmatrix; ASYNC, the copies made by cp.async, two
// tiles deep; MT = 2, two tiles of queries a warp; ONES, the row sums made
// by the tensor cores. Shared memory is addressed in 32 bits from one
// base, a lane's part of each address added once, so every fragment load
// of a tile is the same register at a fixed offset.
template <int D, int MT, bool LDSM, bool ASYNC, bool ONES>
__device__ __forceinline__ void flash_v2_tile(const unsigned short* Q, const unsigned short* K, const unsigned short* V, unsigned short* O,
                                              int S, float scale, int causal, unsigned short* smem) {
    const int WR = 16 * MT, BR = 4 * WR, BC = 64, ST = D + 8;  // a warp's queries, the block's; 64 keys a tile; rows padded by 16 bytes
    const int STAGES = ASYNC ? 2 : 1;                          // tiles of K (and of V) in shared memory at once
    const unsigned TILE = BC * ST * 2;                         // bytes of a stage of K or of V
    unsigned sQ = smem32(smem);                                // Q: [BR][ST] halves
    unsigned sK = sQ + BR * ST * 2;                            // K: [STAGES][BC][ST]
    unsigned sV = sK + STAGES * TILE;                          // V: [STAGES][BC][ST]
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    int g = lane / 4, t = lane % 4;  // the rows and columns of the mma fragments this lane holds
    long long head = (long long)blockIdx.y * S * D;
    int q0 = blockIdx.x * BR, w0 = q0 + warp * WR;  // the block's first query, and this warp's

    int tiles = (S + BC - 1) / BC;
    if (causal) tiles = min(tiles, (q0 + BR + BC - 1) / BC);  // no key past the block's last query
    copy_rows<BR, D, ST, ASYNC>(sQ, Q + head + (long long)q0 * D, S - q0, tid);
    copy_rows<BC, D, ST, ASYNC>(sK, K + head, S, tid);
    copy_rows<BC, D, ST, ASYNC>(sV, V + head, S, tid);
    if constexpr (ASYNC) asm volatile("cp.async.commit_group;");

    // A lane's part of the fragment addresses (see frag_q). For ldmatrix:
    // for Q and for V read transposed, row lane % 16 and column
    // 8·(lane / 16) of a 16×16 block; for K, row lane % 8 + 8·(lane / 16)
    // and column 8·((lane / 8) % 2). Without: row g and column 2t of Q and
    // K, and of V, read across its rows, row 2t and column g.
    unsigned laneQ = LDSM ? ((lane % 16) * ST + (lane / 16) * 8) * 2 : (g * ST + 2 * t) * 2;
    unsigned laneK = LDSM ? ((lane % 8 + (lane / 16) * 8) * ST + ((lane / 8) % 2) * 8) * 2 : laneQ;
    unsigned laneV = LDSM ? laneQ : (2 * t * ST + g) * 2;

    const float sl2 = scale * 1.4426950408889634f;  // scores in log2 units, for ex2
    const unsigned ones[2] = {0x3c003c00u, 0x3c003c00u};  // a B operand of fp16 1s: P times it is P's row sums
    const int NB = D / 8 + (ONES ? 1 : 0);               // blocks of 8 columns of the output, and with ONES one of the sums
    unsigned qf[MT][D / 16][4];                          // this warp's rows of Q as A fragments
    float o[MT][NB][4] = {};                             // its rows of the output, fp32 (then of the sums)
    float m[MT][2];                                      // the running max of rows g and g + 8 of each tile (log2 units)
    float l[MT][2] = {};                                 // without ONES, this lane's part of their running sums
#pragma unroll
    for (int mt = 0; mt < MT; mt++) m[mt][0] = m[mt][1] = NEG_INF;

    for (int kt = 0; kt < tiles; kt++) {
        unsigned stage = ASYNC ? (kt & 1) * TILE : 0;
        if constexpr (ASYNC) {
            if (kt + 1 < tiles) {
                int j1 = (kt + 1) * BC;  // the next tile's first key: in flight during the math below
                long long next = head + (long long)j1 * D;
                copy_rows<BC, D, ST, true>(sK + (TILE - stage), K + next, S - j1, tid);
                copy_rows<BC, D, ST, true>(sV + (TILE - stage), V + next, S - j1, tid);
                asm volatile("cp.async.commit_group;");
                asm volatile("cp.async.wait_group 1;");
            } else {
                asm volatile("cp.async.wait_group 0;");
            }
        } else if (kt > 0) {
            int j0 = kt * BC;  // this tile's first key, copied now into the one stage (tile 0 was copied with Q)
            copy_rows<BC, D, ST, false>(sK, K + head + (long long)j0 * D, S - j0, tid);
            copy_rows<BC, D, ST, false>(sV, V + head + (long long)j0 * D, S - j0, tid);
        }
        __syncthreads();  // tile kt (and Q) have landed for every thread
        if (kt == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++) frag_q<ST, LDSM>(qf[mt][kk], sQ + laneQ + ((warp * WR + mt * 16) * ST + kk * 16) * 2);
        }
        unsigned kb = sK + stage + laneK, vb = sV + stage + laneV;

        // The warp's scores, Q·Kᵀ: K's rows, read as they are, are the
        // column-major B operand the mma takes. Each fragment of K read
        // from shared memory serves all MT tiles of queries.
        float sc[MT][BC / 8][4] = {};
        int j0 = kt * BC;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
            for (int nj = 0; nj < BC / 16; nj++) {
                unsigned b[4];
                frag_k<ST, LDSM>(b, kb + (nj * 16 * ST + kk * 16) * 2);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma16816(sc[mt][2 * nj], qf[mt][kk], b);
                    mma16816(sc[mt][2 * nj + 1], qf[mt][kk], b + 2);
                }
            }
        }
        // Only a tile that holds a key past S, or with causal a key after
        // one of the warp's queries, pays for the masking, and the test is
        // made once for the warp's rows: the rest of the tile's work is one
        // run of straight-line code for the compiler to schedule.
        if (tile_masked<BC>(j0, S, causal, w0))
#pragma unroll
            for (int mt = 0; mt < MT; mt++) mask_scores<BC>(&sc[mt][0][0], j0, S, causal, w0 + mt * 16 + g, 2 * t);
        // The online softmax, a tile of 16 queries at a time.
        unsigned pf[MT][BC / 16][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            float corr[2];
            online_softmax<BC>(&sc[mt][0][0], pf[mt], corr, m[mt], ONES ? nullptr : l[mt], sl2);
            rescale_rows<8 * NB>(&o[mt][0][0], corr);
        }
        // O += P·V: V's rows are the row-major B operand, read transposed.
        // With ONES, a ninth block of columns, P times 1s, keeps the row
        // sums: one mma instead of an add for every two scores, and the
        // sums are of P as rounded to fp16, as the products are.
#pragma unroll
        for (int kc = 0; kc < BC / 16; kc++) {
            if constexpr (ONES) {
#pragma unroll
                for (int mt = 0; mt < MT; mt++) mma16816(o[mt][D / 8], pf[mt][kc], ones);
            }
#pragma unroll
            for (int dj = 0; dj < D / 16; dj++) {
                unsigned b[4];
                frag_v<ST, LDSM>(b, vb + (kc * 16 * ST + dj * 16) * 2);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma16816(o[mt][2 * dj], pf[mt][kc], b);
                    mma16816(o[mt][2 * dj + 1], pf[mt][kc], b + 2);
                }
            }
        }
        __syncthreads();  // everyone is done with this stage before it is loaded again
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float sum[2];
        if constexpr (ONES) {
            sum[0] = o[mt][D / 8][0], sum[1] = o[mt][D / 8][2];  // every column of the sums block holds its row's sum
        } else {
#pragma unroll
            for (int h = 0; h < 2; h++) {  // the 4 lanes of a row each hold a part of its sum
                sum[h] = l[mt][h] + __shfl_xor_sync(0xffffffffu, l[mt][h], 1);
                sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
            }
        }
        store_rows<D>(O + head, &o[mt][0][0], sum, S, w0 + mt * 16, g, 2 * t);
    }
}

// The steps from v1 to v2, each a kernel that changes one thing of the
// one before it, all launched as v2 is (blocks of 128 threads; the
// queries a block takes and the shared memory it needs follow from its
// tiles and stages). d = 64; causal or not.

// flash_v2a_mma is the first step: v1's tiles of 64 keys and its online
// softmax, with both products on the tensor cores, in fp16. A warp takes
// 16 queries (a block, 64), and each product is an mma.sync on a 16×16
// tile of Q and a 16×8 of Kᵀ, or of P and V; the scores and the output
// stay in registers, in fp32, laid out as the mma leaves them. Each lane
// loads its own words of every fragment from shared memory, and the block
// copies each tile with loads and stores before it uses it, as v1 does.
// On the H100 at S = 4096: 29.1× v1's TFLOP/s, the median of three
// rounds (28.9–29.2).
extern "C" __global__ void __launch_bounds__(128) flash_v2a_mma(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                                unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<64, 1, false, false, false>(Q, K, V, O, S, scale, causal, smem);
}

// flash_v2b_ldmatrix is v2a with each 16×16 block of a fragment loaded by
// one ldmatrix, where each lane loaded its four words itself (eight
// halves for V, whose words pair the halves of two keys). On the H100 at
// S = 4096: 1.23× v2a's TFLOP/s, the median of three rounds (1.23–1.25).
extern "C" __global__ void __launch_bounds__(128) flash_v2b_ldmatrix(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                                     unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<64, 1, true, false, false>(Q, K, V, O, S, scale, causal, smem);
}

// flash_v2c_async is v2b with the copies made by cp.async into two stages
// of K and V: the next tile is in flight while this one is used, where
// v2b copied each tile and waited for it before its math. On the H100 at
// S = 4096: 1.16× v2b's TFLOP/s, the median of three rounds (1.15–1.16).
extern "C" __global__ void __launch_bounds__(128) flash_v2c_async(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                                  unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<64, 1, true, true, false>(Q, K, V, O, S, scale, causal, smem);
}

// flash_v2d_two_tiles is v2c with two tiles of 16 queries a warp (a block
// takes 128): each fragment of K and V a warp loads feeds two mma.sync
// instead of one. On the H100 at S = 4096: 1.20× v2c's TFLOP/s, the
// median of three rounds (1.19–1.21).
extern "C" __global__ void __launch_bounds__(128) flash_v2d_two_tiles(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                                      unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<64, 2, true, true, false>(Q, K, V, O, S, scale, causal, smem);
}

// v2: fp16 on the tensor cores, the FlashAttention-2 scheme: a block of 4
// warps takes 128 queries, each warp 32 of them (two tiles of 16, so each
// fragment of K and V read from shared memory feeds two mma's), and walks
// the keys in tiles of 64, staged in shared memory by cp.async two tiles
// deep so the next arrives during the math. Q·Kᵀ and P·V are mma.sync
// instructions fed by ldmatrix; the scores, their softmax and the output
// stay in registers, in fp32, and the row sums come from the tensor cores
// too: the one change from flash_v2d_two_tiles, a ninth block of P·V whose
// B operand is all ones (on the H100 at S = 4096, 1.04× its TFLOP/s, the
// median of three rounds, 1.04–1.04). d = 64; causal or not.
extern "C" __global__ void __launch_bounds__(128) flash_v2(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                           unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<64, 2, true, true, true>(Q, K, V, O, S, scale, causal, smem);
}

// flash_v2_d128 is v2 for d = 128, launched in its place there: a kernel
// of its own, since a kernel's registers are those of its hungriest path.
// Its rows of Q and of the output are twice as long, so each warp keeps
// one tile of 16 queries, not two (a block takes 64), to stay in registers.
extern "C" __global__ void __launch_bounds__(128) flash_v2_d128(const unsigned short* Q, const unsigned short* K, const unsigned short* V,
                                                                unsigned short* O, int S, int d, float scale, int causal) {
    extern __shared__ __align__(16) unsigned short smem[];
    flash_v2_tile<128, 1, true, true, true>(Q, K, V, O, S, scale, causal, smem);
}

// Hopper (sm_90a) only, as lesson 5's matmul_tc_v3: the TMA copies whole
// tiles of Q, K and V into shared memory, 128-byte swizzled, and wgmma, the
// warpgroup-wide asynchronous product, reads them from there. The second
// product takes P from registers: wgmma's A operand may live there, in the
// same layout mma.sync's does.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// wgmma_ss is d (64×N, fp32) = a·b, plus d when acc: a is 64×16 of Q and b
// 16×N of Kᵀ, both read from shared memory, K-major (rows of Q and of K).
template <int N>
static __device__ __forceinline__ void wgmma_ss(float* d, unsigned long long da, unsigned long long db, int acc) {
    if constexpr (N == 64)
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" WG_R32 "}, %32, %33, p, 1, 1, 0, 0; }"
                     : WG_F32 : "l"(da), "l"(db), "r"(acc));
    else
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" WG_R64 "}, %64, %65, p, 1, 1, 0, 0; }"
                     : WG_F64 : "l"(da), "l"(db), "r"(acc));
}

// wgmma_rs is d (64×N, fp32) += a·b: a is 64×16 of P in registers, four
// words a thread, and b 16×N of V in shared memory, N-major (V's rows are
// along d, the output's columns), hence the transpose flag.
template <int N>
static __device__ __forceinline__ void wgmma_rs(float* d, const unsigned* a, unsigned long long db) {
    if constexpr (N == 64)
        asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" WG_R32 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1; }"
                     : WG_F32 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    else
        asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" WG_R64 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1; }"
                     : WG_F64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// bar_sync waits at named barrier id until 256 threads have come to it:
// its own warpgroup's, waiting, and another's, passing with bar_arrive.
static __device__ __forceinline__ void bar_sync(int id) { asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory"); }
static __device__ __forceinline__ void bar_arrive(int id) { asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory"); }

// v3_scores issues sc (64×BC) = Q·Kᵀ for warpgroup w's 64 queries of the
// block's BR against the tile of keys at sK, D/16 wgmma's along d.
template <int D, int BC, int BR>
static __device__ __forceinline__ void v3_scores(float* sc, unsigned sQ, unsigned sK, int w) {
    const unsigned Q_CHUNK = BR * 128, KV_CHUNK = BC * 128;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        // 16 more of d is 32 bytes along the row, or the next chunk.
        unsigned long long da = desc128(sQ + (kk / 4) * Q_CHUNK + w * 64 * 128 + (kk % 4) * 32, 16, 1024);
        unsigned long long db = desc128(sK + (kk / 4) * KV_CHUNK + (kk % 4) * 32, 16, 1024);
        wgmma_ss<BC>(sc, da, db, kk > 0);
    }
}

// v3_values issues o (64×D) += P·V for the tile of values at sV, BC/16
// wgmma's along the keys, P from registers.
template <int D, int BC>
static __device__ __forceinline__ void v3_values(float* o, unsigned (*pf)[4], unsigned sV) {
#pragma unroll
    for (int kc = 0; kc < BC / 16; kc++)  // 16 more keys are 16 rows of 128 bytes on
        wgmma_rs<D>(o, pf[kc], desc128(sV + kc * 2048, BC * 128, 1024));
}

// flash_v3_tile is flash_v3 for head dimension D and tiles of BC keys: see below.
template <int D, int BC>
static __device__ __forceinline__ void flash_v3_tile(const TensorMap& mapQ, const TensorMap& mapK, const TensorMap& mapV, unsigned short* O,
                                                     int S, float scale, int causal) {
    const int NWG = 3, BR = 64 * NWG, STAGES = 3, CH = D / 64;  // consumer warpgroups; queries a block; stages of K and V; 64-column chunks of a row
    const unsigned Q_CHUNK = BR * 128, KV_CHUNK = BC * 128;  // bytes of a chunk: its rows, 128 bytes each
    const unsigned Q_BYTES = CH * Q_CHUNK, KV_BYTES = CH * KV_CHUNK;
    extern __shared__ unsigned char smem_raw[];
    unsigned sQ = (smem32(smem_raw) + 1023) & ~1023u;  // swizzled tiles start on 1024-byte boundaries
    unsigned sK = sQ + Q_BYTES, sV = sK + STAGES * KV_BYTES;
    unsigned qFull = sV + STAGES * KV_BYTES;  // mbarriers, 8 bytes each: Q landed; stage s of K, of V landed; stage s read
    unsigned kFull = qFull + 8, vFull = kFull + 8 * STAGES, empty = vFull + 8 * STAGES;
    int tid = threadIdx.x, wg = tid / 128, bh = blockIdx.y;
    int q0 = blockIdx.x * BR;
    int tiles = (S + BC - 1) / BC;
    if (causal) tiles = min(tiles, (q0 + BR + BC - 1) / BC);  // no key past the block's last query

    if (tid == 0) {
        mbar_init(qFull, 1);
        for (int s = 0; s < STAGES; s++) {
            mbar_init(kFull + 8 * s, 1);  // the producer's arrive; the TMA's bytes complete it
            mbar_init(vFull + 8 * s, 1);
            mbar_init(empty + 8 * s, 128 * NWG);  // every consumer thread is done with the stage
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // the producer: one thread keeps the copies ahead
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");  // hand registers to the consumers
        if (tid == 0) {
            mbar_expect(qFull, Q_BYTES);
            for (int c = 0; c < CH; c++) tma_load3(sQ + c * Q_CHUNK, &mapQ, 64 * c, q0, bh, qFull);
            for (int kt = 0; kt < tiles; kt++) {
                int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(empty + 8 * s, ((kt / STAGES) & 1) ^ 1);
                mbar_expect(kFull + 8 * s, KV_BYTES);
                for (int c = 0; c < CH; c++) tma_load3(sK + s * KV_BYTES + c * KV_CHUNK, &mapK, 64 * c, kt * BC, bh, kFull + 8 * s);
                mbar_expect(vFull + 8 * s, KV_BYTES);
                for (int c = 0; c < CH; c++) tma_load3(sV + s * KV_BYTES + c * KV_CHUNK, &mapV, 64 * c, kt * BC, bh, vFull + 8 * s);
            }
        }
        return;
    }

    // The consumers: warpgroup w takes queries 64·w to 64·w + 63 of the
    // block, each of its warps 16 of them. The fragments are laid out as
    // mma.sync's: a lane holds rows g and g + 8, columns c2 and c2 + 1 of
    // every 8.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 160;");  // 128·24 + 384·160 ≤ 65536
    int w = wg - 1, t = tid % 128, lane = t % 32, g = lane / 4, c2 = 2 * (lane % 4);
    int r0 = q0 + w * 64 + (t / 32) * 16;  // this warp's first query
    const float sl2 = scale * 1.4426950408889634f;
    float o[D / 2];  // 64×D of the output, fp32: columns 8j + c2, +1 of rows g (o[4j], o[4j+1]) and g + 8 (o[4j+2], o[4j+3])
#pragma unroll
    for (int i = 0; i < D / 2; i++) o[i] = 0.0f;
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0, 0};
    mbar_wait(qFull, 0);

    // Turns: the warpgroups take turns on the tensor cores, each issuing
    // its products only when the one before has issued its own, so that
    // the others' softmax runs while one's products do. Warpgroup w waits
    // on named barrier 1 + w and signals the next one's.
    const int next = 1 + (w + 1) % NWG;
    if (w == NWG - 1) bar_arrive(1);  // warpgroup 0 goes first
    float sc[BC / 2];                 // 64×BC scores, laid out as o
    unsigned pf[BC / 16][4];          // P as wgmma's A operand: 16 keys a step
    mbar_wait(kFull, 0);
    bar_sync(1 + w);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    v3_scores<D, BC, BR>(sc, sQ, sK, w);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    bar_arrive(next);
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float corr[2];
    if (tile_masked<BC>(0, S, causal, r0)) mask_scores<BC>(sc, 0, S, causal, r0 + g, c2);
    online_softmax<BC>(sc, pf, corr, m, l, sl2);

    // Each turn issues P·V for this tile and the scores of the next as one
    // group, straight-line: a wgmma under a branch between the fence and the
    // wait made the first form of this loop slower.
    for (int kt = 0; kt + 1 < tiles; kt++) {
        int s = kt % STAGES, s1 = (kt + 1) % STAGES;
        mbar_wait(vFull + 8 * s, (kt / STAGES) & 1);
        mbar_wait(kFull + 8 * s1, ((kt + 1) / STAGES) & 1);
        bar_sync(1 + w);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        v3_values<D, BC>(o, pf, sV + s * KV_BYTES);
        v3_scores<D, BC, BR>(sc, sQ, sK + s1 * KV_BYTES, w);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        bar_arrive(next);
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        mbar_arrive(empty + 8 * s);  // this stage may be refilled
        int j0 = (kt + 1) * BC;
        if (tile_masked<BC>(j0, S, causal, r0)) mask_scores<BC>(sc, j0, S, causal, r0 + g, c2);
        online_softmax<BC>(sc, pf, corr, m, l, sl2);
        // Once the running max settles, most tiles leave it be: skip the
        // multiplies by 1 where no row of the warp moved.
        if (__any_sync(0xffffffffu, corr[0] != 1.0f || corr[1] != 1.0f)) rescale_rows<D>(o, corr);
    }
    {  // the last tile's P·V
        int kt = tiles - 1, s = kt % STAGES;
        mbar_wait(vFull + 8 * s, (kt / STAGES) & 1);
        bar_sync(1 + w);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        v3_values<D, BC>(o, pf, sV + s * KV_BYTES);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        if (w != NWG - 1) bar_arrive(next);  // the last warpgroup's last turn is nobody's cue
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }

#pragma unroll
    for (int h = 0; h < 2; h++) {  // the 4 lanes of a row each hold a part of its sum
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
    store_rows<D>(O + (long long)bh * S * D, o, l, S, r0, g, c2);
}
#endif

// v3: Hopper's own path, FlashAttention-3's ideas: one producer thread has
// the TMA copy tiles of K and V, three deep, while three warpgroups each
// take 64 of the block's 192 queries and run both products as wgmma
// straight from shared memory, so no thread spends instructions on loads
// or on ldmatrix; they take turns on the tensor cores, so that two run
// their softmax while one's products run. d = 64; causal or not. Needs
// sm_90a.
extern "C" __global__ void __launch_bounds__(512, 1) flash_v3(const __grid_constant__ TensorMap mapQ, const __grid_constant__ TensorMap mapK,
                                                              const __grid_constant__ TensorMap mapV, unsigned short* O, int S, int d, float scale, int causal) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    flash_v3_tile<64, 128>(mapQ, mapK, mapV, O, S, scale, causal);
#endif
}

// flash_v3_d128 is v3 for d = 128, launched in its place there, with tiles
// of 64 keys so that the scores and the longer output fit in registers.
extern "C" __global__ void __launch_bounds__(512, 1) flash_v3_d128(const __grid_constant__ TensorMap mapQ, const __grid_constant__ TensorMap mapK,
                                                                   const __grid_constant__ TensorMap mapV, unsigned short* O, int S, int d, float scale, int causal) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    flash_v3_tile<128, 64>(mapQ, mapK, mapV, O, S, scale, causal);
#endif
}
