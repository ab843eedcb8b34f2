// Launches, allocation and graphs: kernels so small that what surrounds
// them (the launch, a synchronisation, an allocation) is most of their
// time.

// empty does nothing: launching it costs the launch and no more.
extern "C" __global__ void empty() {}

// chain_step is one link of a chain of tiny kernels: y = a·x + b over n
// floats. Replayed from a graph of 1000 on the H100, a link took 1.02 µs
// of the GPU's time, an empty kernel 0.80 µs: a chain of N of them, each
// reading the last one's output, is N launches of almost nothing.
extern "C" __global__ void chain_step(const float* x, float* y, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], b);
}

// chain_fused is the whole chain of links in one launch. No element of a
// link depends on another element, so each thread takes its element
// through every link in a register; link k reads link k − 1's result,
// exactly as chain_step's launches would pass it on through memory.
extern "C" __global__ void chain_fused(const float* x, float* y, int n, int links, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return; // the last block's spare threads have no element
    float v = x[i];
    for (int k = 0; k < links; ++k) v = fmaf(a, v, b);
    y[i] = v;
}

// scale_into writes s·x into tmp: a temporary a training step needs for a
// moment, then frees.
extern "C" __global__ void scale_into(const float* x, float* tmp, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tmp[i] = s * x[i];
}

// accumulate adds tmp into y.
extern "C" __global__ void accumulate(float* y, const float* tmp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += tmp[i];
}
