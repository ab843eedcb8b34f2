// Exercise: every thread writes down which warp it is in and where.
//
// A block's threads are cut into warps of 32 (warpSize). Thread i of the
// grid owns element i of each array and writes there: in warp[i], the
// warp it belongs to within its block (0 for the block's first warp); in
// lane[i], its place within that warp (0 to 31); in sm[i], the SM that
// runs it. Launched like which_warp: blocks of 128 threads, ceil(n / 128)
// blocks, so the last block can have threads with no element, and those
// must write nothing at all.
//
// As handed out, every thread writes element 0, and it fails its checks.
// Fill in the TODOs, then have it judged: 'check' in the REPL, or run its
// cell in a notebook.

extern "C" __global__ void which_warp_exercise(int* warp, int* lane, int* sm, int n) {
    int i = 0;  // TODO: this thread's element
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));  // the SM this thread runs on
    warp[i] = 0;  // TODO
    lane[i] = 0;  // TODO
    sm[i] = smid;
}
