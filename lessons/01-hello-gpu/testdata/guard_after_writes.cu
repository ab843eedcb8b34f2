// A planted mistake: the guard comes after the writes, so the spare
// threads of the last block have already written past the end.
extern "C" __global__ void which_warp_exercise(int* warp, int* lane, int* sm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    warp[i] = threadIdx.x / warpSize;
    lane[i] = threadIdx.x % warpSize;
    sm[i] = smid;
    if (i >= n) return;
}
