extern "C" __global__ void where_am_i_exercise(int* block, int* thread, int* sm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    block[i] = blockIdx.x;
    thread[i] = threadIdx.x;
    sm[i] = smid;
}
