// Exercise: write bias_relu_exercise, the two pointwise steps that follow
// the convolution in this layer, as one pass over y, in place:
//   y ← ReLU(y + b), with the bias b of the element's channel.
//
// y is the convolution's output, n fp16 values of an N×H×W×K tensor stored
// NHWC (channels innermost); b holds the K fp16 biases, one a channel. The
// values are fp16 bits in unsigned shorts: h2f turns them into floats and
// f2h rounds a float back (both in the course header below). K is a
// multiple of 8, and so is n.
//
// It runs as bias_relu_nhwc does in "unfused: conv, bias+ReLU": after
// cuDNN's convolution, on blocks of 256 threads, at most two waves of them
// and never more than n / 8 threads, so each thread has several elements
// to do. Which ones is yours to choose.
//
// 'check' runs the whole unfused layer with your kernel at the lesson's
// check sizes and compares y with a float64 layer. A kernel that passes is
// then timed in the layer beside the course's at 32×64×112×112 → 64, and
// passes only if the layer reaches at least 0.85 of its throughput with
// the course's kernel. As handed out it leaves y as the convolution wrote
// it, so 'check' fails.
#include "cudarepl.cuh"

extern "C" __global__ void bias_relu_exercise(unsigned short* y, const unsigned short* b, long long n, int K) {
    // TODO: every element of y, as above
}
