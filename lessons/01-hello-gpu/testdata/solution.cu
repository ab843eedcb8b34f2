// The exercise done: passes every check which_warp passes.
extern "C" __global__ void which_warp_exercise(int* warp, int* lane, int* sm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    warp[i] = threadIdx.x / warpSize;
    lane[i] = threadIdx.x % warpSize;
    sm[i] = smid;
}
