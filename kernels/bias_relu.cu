// The two pointwise steps that follow a convolution in a CNN layer, as
// kernels of their own: each reads its whole fp16 NHWC tensor from global
// memory and writes it back, which is the traffic a fused cuDNN graph saves.
// Each thread handles 8 halves (16 bytes), so element counts and the channel
// count must be multiples of 8.

#include "cudarepl.cuh"

// bias_add_nhwc adds b[c] to every element of channel c of y, in place:
// y is n elements of an NHWC tensor with K channels, so element i is in
// channel i % K.
extern "C" __global__ void bias_add_nhwc(unsigned short* y, const unsigned short* b, long long n, int K) {
    for (long long i = 8 * ((long long)blockIdx.x * blockDim.x + threadIdx.x); i < n; i += 8LL * gridDim.x * blockDim.x) {
        uint4 v = *reinterpret_cast<uint4*>(&y[i]);
        unsigned short* h = reinterpret_cast<unsigned short*>(&v);
        int c = (int)(i % K);
        for (int j = 0; j < 8; j++) h[j] = f2h(h2f(h[j]) + h2f(b[c + j]));
        *reinterpret_cast<uint4*>(&y[i]) = v;
    }
}

// relu_h replaces every negative element of y by 0, in place.
extern "C" __global__ void relu_h(unsigned short* y, long long n) {
    for (long long i = 8 * ((long long)blockIdx.x * blockDim.x + threadIdx.x); i < n; i += 8LL * gridDim.x * blockDim.x) {
        uint4 v = *reinterpret_cast<uint4*>(&y[i]);
        unsigned short* h = reinterpret_cast<unsigned short*>(&v);
        for (int j = 0; j < 8; j++) h[j] = (h[j] & 0x8000) ? 0 : h[j];  // the sign bit: -0 and negatives become +0
        *reinterpret_cast<uint4*>(&y[i]) = v;
    }
}

// bias_relu_nhwc does both steps in one pass, as a framework's fused
// elementwise kernel would: y crosses memory once more after the
// convolution (read and written here), not twice.
extern "C" __global__ void bias_relu_nhwc(unsigned short* y, const unsigned short* b, long long n, int K) {
    for (long long i = 8 * ((long long)blockIdx.x * blockDim.x + threadIdx.x); i < n; i += 8LL * gridDim.x * blockDim.x) {
        uint4 v = *reinterpret_cast<uint4*>(&y[i]);
        unsigned short* h = reinterpret_cast<unsigned short*>(&v);
        int c = (int)(i % K);
        for (int j = 0; j < 8; j++) h[j] = f2h(fmaxf(h2f(h[j]) + h2f(b[c + j]), 0.0f));
        *reinterpret_cast<uint4*>(&y[i]) = v;
    }
}
