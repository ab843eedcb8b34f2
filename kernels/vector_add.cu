// Vector add, c[i] = a[i] + b[i] for n floats.
//
// Each element is read twice and written once, 12 bytes, and nothing is
// reused: no version can beat the time it takes DRAM to move 12·n bytes.
// The versions differ only in how well they keep DRAM busy.

// v1: one thread per element; the guard stops the spare threads of the last block.
extern "C" __global__ void vadd_v1(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// v2: a grid-stride loop; a grid sized to the GPU, not to n, covers any n, and
// each thread handles several elements, so fewer blocks are scheduled.
extern "C" __global__ void vadd_v2(const float* a, const float* b, float* c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}

// v3: float4 loads and stores; a quarter of the memory instructions, each
// moving 16 bytes, and __restrict__ lets the compiler schedule them freely.
extern "C" __global__ void vadd_v3(const float* __restrict__ a, const float* __restrict__ b,
                                   float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;  // whole float4s; cudaMalloc'd pointers are 256-byte aligned
    if (i < n4) {
        float4 x = reinterpret_cast<const float4*>(a)[i];
        float4 y = reinterpret_cast<const float4*>(b)[i];
        reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    // The last n % 4 elements, one thread each.
    int tail = 4 * n4 + i;
    if (i < n % 4) c[tail] = a[tail] + b[tail];
}

// vadd_unguarded is v1 without its guard: the spare threads of the last
// block read and write past the end of the arrays. The lesson runs it to show
// what the guard is for.
extern "C" __global__ void vadd_unguarded(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
