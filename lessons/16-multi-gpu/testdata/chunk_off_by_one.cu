// A planted mistake: the chunk one step ahead, (r − step) mod ranks, so a rank adds into a chunk its neighbour has not finished.
extern "C" __global__ void ring_step_exercise(float* bufs, int ranks, int count, int step) {
    int chunk = count / ranks;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ranks * chunk) return;
    int r = t / chunk, i = t % chunk;
    int from = (r - 1 + ranks) % ranks;
    int c = ((r - step) % ranks + ranks) % ranks;
    bufs[(long long)r * count + c * chunk + i] += bufs[(long long)from * count + c * chunk + i];
}
