// Exercise: vector add, c[i] = a[i] + b[i] for n floats.
//
// This kernel is launched like vadd_v1: blocks of 256 threads, and
// ceil(n / 256) blocks, so the last block may have threads with no element.
// Fill in the two TODOs, then have it judged: 'check' in the REPL, or run
// its cell in a notebook. As handed out, every thread works on element 0,
// so the check fails.

extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {
    int i = 0;  // TODO: this thread's index in the whole grid

    // TODO: the guard, for the threads of the last block that have no element
    float x = a[i];
    float y = b[i];
    c[i] = x + y;
}
