// A planted mistake: the index within the block taken for the index in
// the grid, so every block writes elements 0 to 127 and none writes 128.
extern "C" __global__ void which_warp_exercise(int* warp, int* lane, int* sm, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    warp[i] = threadIdx.x / warpSize;
    lane[i] = threadIdx.x % warpSize;
    sm[i] = smid;
}
