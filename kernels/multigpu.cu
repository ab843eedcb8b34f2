// Several GPUs: the kernels of lesson 16. NCCL does the collectives; these
// are the parts of a ring all-reduce written by hand, the ring's index
// arithmetic simulated on one GPU, and the elementwise pieces of a small
// MLP's training step (its matrix products are cuBLAS's).

// ring_add adds in into acc, n floats: the reduce of one ring step, in
// being the chunk that came from the GPU before this one (a copy of it
// here, or the other GPU's memory itself, read over the link). float4
// loads and stores, then the tail.
extern "C" __global__ void ring_add(float* acc, const float* in, long long n) {
    long long n4 = n / 4;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    bool aligned = ((unsigned long long)acc % 16 == 0) && ((unsigned long long)in % 16 == 0);
    if (aligned) {
        float4* a4 = reinterpret_cast<float4*>(acc);
        const float4* b4 = reinterpret_cast<const float4*>(in);
        for (long long j = i; j < n4; j += stride) {
            float4 a = a4[j], b = b4[j];
            a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
            a4[j] = a;
        }
        for (long long j = 4 * n4 + i; j < n; j += stride) acc[j] += in[j];
    } else {
        for (long long j = i; j < n; j += stride) acc[j] += in[j];
    }
}

// ring_step is one step of a ring reduce-scatter over ranks buffers of
// count floats each, laid end to end in bufs, all on one GPU: rank r adds
// the chunk (r − step − 1) mod ranks of rank r − 1 (mod ranks) into its
// own. After ranks − 1 steps, rank r holds the sum over every rank of
// chunk (r + 1) mod ranks. One thread per element of a chunk and rank;
// in a step no rank reads the chunk its neighbour writes, so the ranks
// run at once without racing.
extern "C" __global__ void ring_step(float* bufs, int ranks, int count, int step) {
    int chunk = count / ranks;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ranks * chunk) return;
    int r = t / chunk, i = t % chunk;
    int from = (r - 1 + ranks) % ranks;
    int c = ((r - step - 1) % ranks + ranks) % ranks;
    bufs[(long long)r * count + c * chunk + i] += bufs[(long long)from * count + c * chunk + i];
}

// relu_fwd writes x = max(z, 0), n floats: a layer's activation.
extern "C" __global__ void relu_fwd(const float* z, float* x, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaxf(z[i], 0.0f);
}

// relu_bwd turns the gradient g with respect to a layer's activation into
// the gradient with respect to its input z, in place: g stays where z > 0.
extern "C" __global__ void relu_bwd(float* g, const float* z, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && z[i] <= 0.0f) g[i] = 0.0f;
}

// mse_grad writes the gradient of the loss sum((y − t)²) · scale / 2 with
// respect to y: g = (y − t) · scale, n floats.
extern "C" __global__ void mse_grad(const float* y, const float* t, float* g, long long n, float scale) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[i] = (y[i] - t[i]) * scale;
}

// sgd_step moves the weights w against their gradient g, summed over the
// GPUs by the all-reduce: w −= lr · g, n floats.
extern "C" __global__ void sgd_step(float* w, const float* g, long long n, float lr) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) w[i] -= lr * g[i];
}
