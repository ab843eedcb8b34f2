// Planted mistake: the max is moved on before the correction is taken, so exp(m − m') is exp(0) = 1 and neither l nor o
// is rescaled when the max grows.

#include "cudarepl.cuh"

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
            float mNew = fmaxf(m, s);
            m = mNew;
            float corr = __expf(m - mNew);
            float p = __expf(s - mNew);
            l = l * corr + p;
#pragma unroll
            for (int c = 0; c < DMAX; c++) o[c] = o[c] * corr + (c < d ? p * Vs[j][c] : 0.0f);
        }
    }
    if (!active) return;
    for (int c = 0; c < d; c++) O[head + (long long)i * d + c] = o[c] / l;
}
