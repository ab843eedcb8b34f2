// Hello, GPU: every thread writes down who and where it is.

// where_am_i records, for each of n threads, its block, its thread index in
// the block, and the SM (streaming multiprocessor) that ran it. The guard
// keeps the spare threads of the last block from writing past n.
extern "C" __global__ void where_am_i(int* block, int* thread, int* sm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));  // a special register, read through PTX
    block[i] = blockIdx.x;
    thread[i] = threadIdx.x;
    sm[i] = smid;
}
