// Exercise: one link of a chain of tiny kernels, y = a·x + b over n floats.
//
// cudarepl launches this kernel like the lesson's chain: blocks of 256
// threads, ceil(n / 256) of them. It captures a chain of such launches
// (each reading the last one's output) into a CUDA graph, replays the
// graph, and checks the chain's end against the same chain worked out on
// the CPU, with a, b = −1, 1. Write the link (the TODO), then have it
// judged: 'check' in the REPL, or run its cell in a notebook.

extern "C" __global__ void chain_exercise(const float* x, float* y, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // TODO: for the threads that have an element, y[i] = a·x[i] + b
}
