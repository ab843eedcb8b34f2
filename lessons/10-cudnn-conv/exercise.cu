// Exercise: write conv_direct_exercise, this lesson's 3×3 convolution as
// its loops, in fp32, on data stored NHWC (channels innermost):
//   x  N×H×W×C, the input
//   w  K×3×3×C, K filters of 3×3 taps, C weights a tap (cuDNN's NHWC
//      filter order: filter, tap row, tap column, channel)
//   y  N×H×W×K, the output: the same H and W as x (padding 1, stride 1)
//
// Output element (n, p, q, k) is the sum, over the channels c and the
// filter's 3×3 taps, of filter k's weight at that tap and channel times the
// input at channel c of the pixel the tap lies on, when the filter is laid
// on the 3×3 window of image n centred on pixel (p, q) as cuDNN lays it:
// tap row 0, column 0 on the window's top-left pixel. Taps that fall
// outside the image count as zeros.
//
// It is launched as conv_direct, the course's version it is judged like:
// one thread per output element, N·H·W·K of them in blocks of 256, so the
// last block has threads to spare. Which element each thread computes is
// yours to choose, as long as every element is written once.
//
// 'check' compares every element with a float64 convolution at four small
// shapes, two of them with C and K not multiples of 8, and times a kernel
// that passes beside conv_direct at 32×64×112×112 → 64. As handed out it
// writes nothing, so 'check' fails on y[0].
extern "C" __global__ void conv_direct_exercise(const float* x, const float* w, float* y, int N, int C, int H, int W, int K) {
    // TODO: y's element for this thread, as above
}
