// Exercise: flash attention's online softmax, one query per thread. It
// compiles as it is, and fails its checks until the TODOs are written.
//
// Q, K, V and O are [heads][S][d] fp32, one head per blockIdx.y. Each block
// of 64 threads takes 64 queries; thread i holds its query (already times
// scale) and its running output o in registers. The block stages K and V
// in tiles of 64 keys in shared memory, and each thread walks a tile one
// key at a time.
//
// For each key you have its score s. Keep three things per query:
//   m, the largest score so far (it starts at −∞, not at 0);
//   l, the sum of exp(score − m) over the keys so far;
//   o, the sum of exp(score − m)·v over the keys so far.
// When s raises the max to m', the old terms were weighted against m:
// multiply l and every o[c] by exp(m − m') before adding the new key's,
// exp(s − m'). At the end, the output is o / l.
//
// Launched as flash_v1 is: blocks of 64 threads, grid (ceil(S/64), heads);
// d ≤ 64, any S ≥ 1. Judge it with 'check'.

#define NEG_INF __int_as_float(0xff800000)  // −∞

extern "C" __global__ void __launch_bounds__(64) flash_exercise(const float* Q, const float* K, const float* V, float* O, int S, int d, float scale) {
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
            // TODO: the online-softmax update for this key: the new max,
            // l and o rescaled to it, then this key's exp(s − max) added to
            // l, and times Vs[j][c] to each o[c] (c < d).
        }
    }
    if (!active) return;
    // TODO: the output is o / l, not o.
    for (int c = 0; c < d; c++) O[head + (long long)i * d + c] = o[c];
}

// Second part: the same update, causal. A block of 128 threads takes 128
// queries, and walks its tiles of 64 keys from the last it needs (the one
// holding its last query) back to the first, as FlashAttention-2 walks a
// causal block's tiles: the tiles that cross the diagonal, the only ones
// that need the mask, come first. A key after the query has the score −∞.
//
// Where a block's queries reach past its first 64, the first tile walked
// holds only keys after its first 64 queries: for them, every score so far
// is −∞, and so is the max. Write the update so that such a query's l and
// o stay 0 until it meets a key it may see.
//
// Launched as flash_v1_causal is: blocks of 128 threads, grid
// (ceil(S/128), heads); d ≤ 64, any S ≥ 1, causal or not. Judge it with
// 'check <this file> --variant flash_exercise_causal --like flash_v1_causal'.
extern "C" __global__ void __launch_bounds__(128) flash_exercise_causal(const float* Q, const float* K, const float* V, float* O, int S, int d,
                                                                        float scale, int causal) {
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
            // TODO: the same update as above, for a query that may have
            // seen nothing but −∞ so far.
        }
    }
    if (!active) return;
    // TODO: the output is o / l, not o.
    for (int c = 0; c < d; c++) O[head + (long long)i * d + c] = o[c];
}
