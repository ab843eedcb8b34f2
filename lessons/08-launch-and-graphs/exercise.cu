// Exercise: the whole chain of tiny kernels in one launch.
//
// The lesson's chain is one launch of chain_step a link, each computing
// y = a·x + b over n floats from the last one's output. Here one kernel
// does it all: for each of the first n elements, x[i] goes through every
// link, and the last link's result is written to y[i].
//
// cudarepl launches this kernel once for the whole chain, in blocks of
// 256 threads, ceil(n / 256) of them, with a, b = −1, 1. It checks y
// against the chain worked out on the CPU, for chains of 1 to 101 links
// over 1 to 4099 floats, then times it at 1000 links over 4096 floats
// beside the graph of 1000 chain_step launches: a pass needs at least 10
// times the graph's rate. As handed out it writes nothing, so 'check'
// fails until you write it (the TODO): 'check' in the REPL, or run its
// cell in a notebook.

extern "C" __global__ void chain_fused_exercise(const float* x, float* y, int n, int links, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // TODO: for the threads that have an element, take x[i] through the
    // chain (the link y = a·x + b, applied links times) and write the
    // last link's result to y[i].
}
