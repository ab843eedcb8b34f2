// A planted mistake: the warp counted across the whole grid (i / 32), not
// within the block; right in the first block only.
extern "C" __global__ void which_warp_exercise(int* warp, int* lane, int* sm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    warp[i] = i / warpSize;
    lane[i] = threadIdx.x % warpSize;
    sm[i] = smid;
}
