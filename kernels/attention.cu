// Attention as a chain of launches, the way a framework runs it op by op:
//
//   scores = Q·Kᵀ        cuBLAS, strided batched: one S×S matrix per head
//   scores *= 1/√d       scale_h
//   scores[i][j>i] = −∞  causal_mask_h, for causal attention
//   P = softmax(scores)  softmax_h, lesson 12's fp16 kernel, row by row
//   O = P·V              cuBLAS again
//
// Q, K, V and O are [B][H][S][d] fp16; scores and P are [B][H][S][S] fp16,
// and every step between the products reads and writes all of them. These
// are the kernels of the two middle steps: each does one multiplication or
// one comparison per element, so each is bound by memory, twice S² halves
// per head.

#include "cudarepl.cuh"

#define HALF_NEG_INF 0xfc00  // −∞ in fp16: exp(−∞) = 0, so softmax gives it no weight

// scale_h multiplies each of the n scores s by scale, in place, 8 halves
// (16 bytes) per thread per step, the product in fp32.
extern "C" __global__ void scale_h(unsigned short* s, long long n, float scale) {
    for (long long i = 8 * ((long long)blockIdx.x * blockDim.x + threadIdx.x); i < n; i += 8LL * gridDim.x * blockDim.x) {
        if (i + 8 <= n) {
            uint4 v = *reinterpret_cast<uint4*>(&s[i]);
            unsigned short* h = reinterpret_cast<unsigned short*>(&v);
#pragma unroll
            for (int j = 0; j < 8; j++) h[j] = f2h(h2f(h[j]) * scale);
            *reinterpret_cast<uint4*>(&s[i]) = v;
        } else {
            for (long long j = i; j < n; j++) s[j] = f2h(h2f(s[j]) * scale);
        }
    }
}

// causal_mask_h sets the scores of keys after their query to −∞: scores is
// rows S×S matrices' rows (rows = B·H·S), and in row r, query r mod S, the
// columns past it are masked. Each block takes a row and strides along it.
extern "C" __global__ void causal_mask_h(unsigned short* s, int S, long long rows) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        int i = (int)(r % S);
        unsigned short* row = s + r * S;
        for (int j = i + 1 + threadIdx.x; j < S; j += blockDim.x) row[j] = HALF_NEG_INF;
    }
}
