// Exercise: one step of a ring reduce-scatter, simulated on one GPU.
//
// ranks buffers of count floats each lie end to end in bufs: rank r's is
// bufs[r * count] to bufs[r * count + count − 1], cut into ranks chunks of
// chunk = count / ranks floats. At each step every rank receives one chunk
// from the rank before it in the ring (rank ranks − 1 comes before rank 0)
// and adds it into the same chunk of its own buffer. Which chunk moves
// turns with the step, so that after ranks − 1 steps rank r holds chunk
// (r + 1) mod ranks summed over every rank: at step s, rank r adds chunk
// (r − s − 1) mod ranks, which its neighbour finished adding into at the
// step before.
//
// cudarepl launches this kernel ranks − 1 times, with step = 0, 1, …, a
// thread for each element of a chunk and rank: ranks × chunk threads in
// blocks of 256, so the last block may have threads with no element. It
// checks the chunk each rank owns against the sum worked out on the CPU,
// for 2 to 8 ranks, and that nothing was written outside bufs. As handed
// out every rank adds its own chunk 0 into itself, so 'check' fails until
// you fill in the three TODOs: 'check' in the REPL, or run its cell in a
// notebook.

extern "C" __global__ void ring_step_exercise(float* bufs, int ranks, int count, int step) {
    int chunk = count / ranks;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    // TODO: the guard, for the threads past the last of the ranks × chunk elements
    int r = t / chunk, i = t % chunk;  // this thread's rank, and its element of a chunk
    int from = r;  // TODO: the rank r receives from
    int c = 0;     // TODO: the chunk rank r adds at this step, from 0 to ranks − 1
    bufs[(long long)r * count + c * chunk + i] += bufs[(long long)from * count + c * chunk + i];
}
