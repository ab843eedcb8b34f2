// Launches, allocation and graphs: kernels so small that what surrounds
// them (the launch, a synchronisation, an allocation) is most of their
// time.

// empty does nothing: launching it costs the launch and no more.
extern "C" __global__ void empty() {}

// chain_step is one link of a chain of tiny kernels: y = a·x + b over n
// floats, a few microseconds of work. A chain of N of them, each reading
// the last one's output, is N launches of almost nothing.
extern "C" __global__ void chain_step(const float* x, float* y, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], b);
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
