// Planted mistake: the causal update as the first part has it, unguarded. A query whose keys so far were all after it
// has m = −∞ and a score of −∞, so exp(m − m') and exp(s − m') are both exp(−∞ − (−∞)) = NaN.

#include "cudarepl.cuh"

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
            float mNew = fmaxf(m, s);
            float corr = __expf(m - mNew);
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
