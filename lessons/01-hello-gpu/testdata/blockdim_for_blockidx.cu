// A planted mistake: blockDim.x where blockIdx.x belongs in the index, so
// every block starts at element 128 × 128 and element 0 is never written.
extern "C" __global__ void which_warp_exercise(int* warp, int* lane, int* sm, int n) {
    int i = blockDim.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    warp[i] = threadIdx.x / warpSize;
    lane[i] = threadIdx.x % warpSize;
    sm[i] = smid;
}
