// A planted mistake: no guard, so the last block's spare threads take a rank past the last and write behind bufs.
extern "C" __global__ void ring_step_exercise(float* bufs, int ranks, int count, int step) {
    int chunk = count / ranks;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / chunk, i = t % chunk;
    int from = (r - 1 + ranks) % ranks;
    int c = ((r - step - 1) % ranks + ranks) % ranks;
    bufs[(long long)r * count + c * chunk + i] += bufs[(long long)from * count + c * chunk + i];
}
