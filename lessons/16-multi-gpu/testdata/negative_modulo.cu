// A planted mistake: C's % keeps the sign of r − step − 1, so rank 0's chunk is −1 at step 0: it writes before its own buffer.
extern "C" __global__ void ring_step_exercise(float* bufs, int ranks, int count, int step) {
    int chunk = count / ranks;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ranks * chunk) return;
    int r = t / chunk, i = t % chunk;
    int from = (r - 1 + ranks) % ranks;
    int c = (r - step - 1) % ranks;
    bufs[(long long)r * count + c * chunk + i] += bufs[(long long)from * count + c * chunk + i];
}
