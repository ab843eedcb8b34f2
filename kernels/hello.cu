// Hello, GPU: every thread writes down who and where it is; then one
// thread times a load from each level of the memory hierarchy.

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

// which_warp records, for each of n threads, the warp it belongs to within
// its block, its lane in that warp, and its SM. A block's threads are cut
// into warps of warpSize (32) in the order of threadIdx.x: threads 0–31
// are warp 0, 32–63 warp 1, and so on; every warp of a block runs on the
// block's SM.
extern "C" __global__ void which_warp(int* warp, int* lane, int* sm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    warp[i] = threadIdx.x / warpSize;
    lane[i] = threadIdx.x % warpSize;
    sm[i] = smid;
}

// chase_links lays out the cycle chase follows: the word at the start of
// line order[k] (a line is 128 bytes, 32 words) holds the index of the word
// at the start of line order[k + 1], and the last links back to the first.
// order is a random permutation of the lines, so that consecutive loads
// land on unrelated lines and no prefetch can guess the next one.
extern "C" __global__ void chase_links(unsigned* next, const unsigned* order, int lines) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= lines) return;
    next[order[k] * 32u] = order[(k + 1) % lines] * 32u;
}

// chase is one thread following the cycle from start: warm loads first,
// untimed, so that the lines sit in whatever level of cache can hold them,
// then steps loads timed by the SM's cycle counter and the GPU's nanosecond
// timer. Each load's address is the value the previous load returned, so
// no two loads are ever in flight together: the time per step is the time
// of one load from wherever the footprint lives. out gets the nanoseconds,
// the cycles, and the index reached (which keeps the loads from being
// optimized away).
extern "C" __global__ void chase(const unsigned* next, unsigned start, int warm, int steps, long long* out) {
    unsigned j = start;
    for (int k = 0; k < warm; k++) j = next[j];
    unsigned long long t0, t1;
    // The "memory" clobbers keep the compiler from moving loads across the
    // timer reads.
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0) : : "memory");
    long long c0 = clock64();
    for (int k = 0; k < steps; k++) j = next[j];
    long long c1 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1) : : "memory");
    out[0] = (long long)(t1 - t0);
    out[1] = c1 - c0;
    out[2] = j;
}
