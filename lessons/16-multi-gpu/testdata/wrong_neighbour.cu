// A planted mistake: the neighbour on the other side, r + 1. With two ranks the two sides are one; from three on, the sums land in the wrong chunks.
extern "C" __global__ void ring_step_exercise(float* bufs, int ranks, int count, int step) {
    int chunk = count / ranks;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ranks * chunk) return;
    int r = t / chunk, i = t % chunk;
    int from = (r + 1) % ranks;
    int c = ((r - step - 1) % ranks + ranks) % ranks;
    bufs[(long long)r * count + c * chunk + i] += bufs[(long long)from * count + c * chunk + i];
}
