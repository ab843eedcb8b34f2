// Attention as a chain of launches, the way a framework runs it op by op:
//
//   scores = Q·Kᵀ        cuBLAS, strided batched: one S×S matrix per head
//   scores *= 1/√d       scale_h
//   scores[i][j>i] = −∞  causal_mask_h, for causal attention
//   P = softmax(scores)  softmax_h, lesson 12's fp16 kernel, row by row
//   O = P·V              cuBLAS again
//
// Q, K, V and O are [B][H][S][d] fp16; scores and P are [B][H][S][S] fp16.
// These are the kernels of the two middle steps: scale_h reads and writes
// every score, causal_mask_h writes the half above the diagonal and reads
// nothing. Each does one multiplication or none per element, so each is
// bound by memory.
//
// masked_softmax, last, is the lesson's exercise as the course writes it:
// the scale, the mask and the softmax in one launch, on fp32 scores.

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

// causal_mask_h sets the scores of keys after their query to −∞: scores
// holds rows rows of S (rows = B·H·S), and row r, query i = r mod S, is
// masked from column i + 1 to its end. It reads nothing and writes
// (S − 1)·S/2 halves a head. A warp takes a row, so that the short rows at
// the bottom of each head leave no more than a warp idle, and writes it 16
// bytes (8 halves) a store; only the up to 7 halves before the row's first
// 16-byte boundary and after its last take 2-byte stores. Launched with
// blocks of 256 threads, 8 rows at a time, the warps striding over the rows.
extern "C" __global__ void causal_mask_h(unsigned short* s, int S, long long rows) {
    const uint4 inf8 = make_uint4(0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u);  // 8 × −∞
    int lane = threadIdx.x % 32;
    long long warps = (long long)gridDim.x * blockDim.x / 32;
    for (long long r = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; r < rows; r += warps) {
        long long begin = r * S + r % S + 1, end = (r + 1) * S;  // the masked halves, as indices into s
        long long a = min(end, (begin + 7) / 8 * 8);              // the first 16-byte boundary, or the end
        long long b = max(a, end / 8 * 8);                        // the last, or a
        if (begin + lane < a) s[begin + lane] = HALF_NEG_INF;     // a − begin < 8
        for (long long c = a / 8 + lane; c < b / 8; c += 32) reinterpret_cast<uint4*>(s)[c] = inf8;
        if (b + lane < end) s[b + lane] = HALF_NEG_INF;           // end − b < 8
    }
}

// masked_softmax is the chain's scale, mask and softmax in one launch, on
// fp32 scores: row r of x holds the S scores of query i = r mod S, and y is
// the softmax over the keys of scale·x; with causal set, the keys j > i get
// probability 0. A causal row reads the i + 1 scores its query sees and
// writes all S. A block per row (blockDim.x a multiple of 32, 256 as
// launched); the row's max and sum are reduced by warp shuffles, then
// across the warps through shared memory.
extern "C" __global__ void masked_softmax(const float* x, float* y, int rows, int S, float scale, int causal) {
    __shared__ float scratch[2][32];  // a max and a sum per warp: two arrays, so no barrier between the reductions
    long long r = blockIdx.x;
    if (r >= rows) return;  // the whole block: no barrier is left waiting
    const float* xr = x + r * S;
    float* yr = y + r * S;
    int keys = causal ? (int)(r % S) + 1 : S;  // query r mod S sees keys 0 … keys − 1
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;

    float m = NEG_INF;
    for (int j = threadIdx.x; j < keys; j += blockDim.x) m = fmaxf(m, scale * xr[j]);
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) scratch[0][warp] = m;
    __syncthreads();  // every warp's max is in scratch[0]
    m = NEG_INF;
    for (int w = 0; w < warps; w++) m = fmaxf(m, scratch[0][w]);

    float d = 0.0f;
    for (int j = threadIdx.x; j < keys; j += blockDim.x) d += __expf(scale * xr[j] - m);
    for (int off = 16; off > 0; off /= 2) d += __shfl_xor_sync(0xffffffffu, d, off);
    if (lane == 0) scratch[1][warp] = d;
    __syncthreads();  // every warp's sum is in scratch[1]
    d = 0.0f;
    for (int w = 0; w < warps; w++) d += scratch[1][w];

    float inv = 1.0f / d;  // d ≥ 1: the max's own term is exp(0)
    for (int j = threadIdx.x; j < S; j += blockDim.x) yr[j] = j < keys ? __expf(scale * xr[j] - m) * inv : 0.0f;
}
