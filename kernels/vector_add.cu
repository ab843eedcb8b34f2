// Vector add, c[i] = a[i] + b[i] for n floats.
//
// Each element is read twice and written once, 12 bytes, and nothing is
// reused: no version can beat the time it takes DRAM to move 12·n bytes.
// The versions differ only in how well they keep DRAM busy. v2 and v3 each
// make one change to v1.

// v1: one thread per element; the guard stops the spare threads of the last block.
extern "C" __global__ void vadd_v1(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// v2: v1 in a grid-stride loop, on as many blocks as the SMs hold at once,
// not one per blockDim.x elements: no block waits for another to finish
// (on the H200, 2.81× v1 at 64 threads a block; at 256, 1.068×, the
// median of five rounds).
extern "C" __global__ void vadd_v2(const float* a, const float* b, float* c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}

// v3: float4 loads and stores, one change to v1: a quarter of the memory
// instructions, and four times the bytes for each load a warp waits on
// (on the H200, 1.264× v1, the median of five rounds).
extern "C" __global__ void vadd_v3(const float* a, const float* b, float* c, int n) {
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

// vadd_v3_restrict is a control: v3 with one change, __restrict__ on its
// pointers, the promise that a, b and c do not overlap. The compiler loads a
// and b through the read-only path (ld.global.nc), which pays where data is
// read again; here none is (on the H200, 1.000× v3, 0.991–1.007 over five
// rounds).
extern "C" __global__ void vadd_v3_restrict(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    if (i < n4) {
        float4 x = reinterpret_cast<const float4*>(a)[i];
        float4 y = reinterpret_cast<const float4*>(b)[i];
        reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
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
