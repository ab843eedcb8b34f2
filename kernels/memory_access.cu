// Memory access: the same bytes, moved in different orders and widths.
//
// DRAM and the L2 cache move memory in 32-byte sectors, and a warp's loads
// are served together: 32 threads reading 32 neighbouring floats need 4
// sectors, 32 threads reading floats far apart need 32. Every kernel here
// is memory-bound, so its time is the sectors it moves, and how many of
// them it keeps in flight at once.

// read_stride reads x as a rows × stride matrix, column by column, and
// writes y in order: blockIdx.y is the column, and consecutive threads
// read floats stride apart. At stride 1 it is a copy; from stride 8 on,
// each float a warp reads has a 32-byte sector of its own, and the other
// 28 bytes are gone from L2 before the warp that needs them comes.
// Nsight Compute counts 4 × stride bytes from DRAM for each float read,
// up to 64: from stride 16 on, two sectors for each float.
extern "C" __global__ void read_stride(const float* x, float* y, int rows, int stride) {
    int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
    if (r < rows) y[(long long)c * rows + r] = x[(long long)r * stride + c];
}

// read_stride_sum is read_stride's control: the same reads in the same
// order, but nothing written for each float. The block adds up what it
// read and writes one sum, a float for every blockDim.x read, so what it
// loses with the stride is what the reads alone lose. blockDim.x is a
// multiple of 32.
extern "C" __global__ void read_stride_sum(const float* x, float* sums, int rows, int stride) {
    __shared__ float warps[32];
    int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
    float v = r < rows ? x[(long long)r * stride + c] : 0.0f;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x + 31) / 32 ? warps[lane] : 0.0f;
        for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) sums[(long long)c * gridDim.x + blockIdx.x] = v;
    }
}

// Particle is one particle as an array of structs keeps it: 24 bytes.
struct Particle {
    float x, y, z, vx, vy, vz;
};

// advance_aos moves particles along x by vx·dt, from an array of structs:
// a thread's two floats sit 24 bytes from the next thread's, so a warp's
// loads span 768 bytes to use 256 of them.
extern "C" __global__ void advance_aos(const Particle* p, float* xo, int n, float dt) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) xo[i] = p[i].x + p[i].vx * dt;
}

// advance_soa is the same from a struct of arrays: x and vx each lie
// contiguous, so every byte a warp loads is used.
extern "C" __global__ void advance_soa(const float* x, const float* vx, float* xo, int n, float dt) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) xo[i] = x[i] + vx[i] * dt;
}

// copy_scalar is a grid-stride copy, a float a load. Each thread's store
// needs its load's data, and its next load waits behind that store: 4
// bytes in flight a thread.
extern "C" __global__ void copy_scalar(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i];
}

// copy_unrolled does four floats a trip round the loop, written out. It is
// no faster: x and y might overlap, so y[i] might be x[i + s], and the
// compiler must keep each load after the store before it. Still 4 bytes.
extern "C" __global__ void copy_unrolled(const float* x, float* y, int n) {
    int s = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * s < n; i += 4 * s) {
        y[i] = x[i];
        y[i + s] = x[i + s];
        y[i + 2 * s] = x[i + 2 * s];
        y[i + 3 * s] = x[i + 3 * s];
    }
    for (; i < n; i += s) y[i] = x[i];
}

// copy_restrict is copy_unrolled with x and y declared __restrict__, never
// overlapping: the compiler issues the four loads before the four stores,
// 16 bytes in flight a thread.
extern "C" __global__ void copy_restrict(const float* __restrict__ x, float* __restrict__ y, int n) {
    int s = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * s < n; i += 4 * s) {
        y[i] = x[i];
        y[i + s] = x[i + s];
        y[i + 2 * s] = x[i + 2 * s];
        y[i + 3 * s] = x[i + 3 * s];
    }
    for (; i < n; i += s) y[i] = x[i];
}

// copy_float4 moves a float4 a load: 16 bytes in flight a thread from one
// instruction, overlap or not. The last n % 4 floats go one at a time.
extern "C" __global__ void copy_float4(const float* x, float* y, int n) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    int s = gridDim.x * blockDim.x, first = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = first; i < n / 4; i += s) y4[i] = x4[i];
    for (int i = n / 4 * 4 + first; i < n; i += s) y[i] = x[i];
}

// copy_float4_restrict has both: four float4 loads issued before their
// stores, 64 bytes in flight a thread.
extern "C" __global__ void copy_float4_restrict(const float* __restrict__ x, float* __restrict__ y, int n) {
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
    int s = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x, n4 = n / 4;
    for (; i + 3 * s < n4; i += 4 * s) {
        y4[i] = x4[i];
        y4[i + s] = x4[i + s];
        y4[i + 2 * s] = x4[i + 2 * s];
        y4[i + 3 * s] = x4[i + 3 * s];
    }
    for (; i < n4; i += s) y4[i] = x4[i];
    for (i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s) y[i] = x[i];
}

// copy_deep orders the loads itself: eight float4 loads, then the eight
// stores, 128 bytes in flight a thread, no __restrict__ needed. The eight
// float4 take 32 registers.
extern "C" __global__ void copy_deep(const float* x, float* y, int n) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    int s = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x, n4 = n / 4;
    for (; i + 7 * s < n4; i += 8 * s) {
        float4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = x4[i + k * s];
#pragma unroll
        for (int k = 0; k < 8; k++) y4[i + k * s] = v[k];
    }
    for (; i < n4; i += s) y4[i] = x4[i];
    for (i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s) y[i] = x[i];
}

// copy_deep_bounded is copy_deep with __launch_bounds__(256, 8): blocks of
// at most 256 threads, at least 8 of them on an SM at once. 8 × 256
// threads share 65536 registers, so the compiler must make do with 32 a
// thread, and 128 bytes in flight no longer fit.
extern "C" __global__ void __launch_bounds__(256, 8) copy_deep_bounded(const float* x, float* y, int n) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    int s = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x, n4 = n / 4;
    for (; i + 7 * s < n4; i += 8 * s) {
        float4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = x4[i + k * s];
#pragma unroll
        for (int k = 0; k < 8; k++) y4[i + k * s] = v[k];
    }
    for (; i < n4; i += s) y4[i] = x4[i];
    for (i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s) y[i] = x[i];
}

// Transpose: out (cols × rows) = inᵀ (rows × cols). Every version is launched
// alike, blocks of 32 × 8 threads each moving a 32 × 32 tile, four elements
// a thread, so only the order of the accesses differs.
#define TILE 32
#define TILE_ROWS 8

// v1: naive: each thread reads in along a row, coalesced, and writes out
// down a column: a warp's 32 writes land in 32 rows of out, 32 sectors for
// 128 bytes.
extern "C" __global__ void transpose_v1(const float* in, float* out, int rows, int cols) {
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < cols && y < rows) out[(long long)x * rows + y] = in[(long long)y * cols + x];
    }
}

// v2: stage the tile in shared memory: read it along rows of in, write it
// along rows of out, and turn it in shared memory, which has no sectors.
// Both global accesses are coalesced; but a warp reading a column of the
// tile hits one of the 32 banks 32 times, and waits for each in turn.
extern "C" __global__ void transpose_v2(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)y * cols + x];
    }
    __syncthreads();  // the whole tile is in before any thread reads another's element
    x = blockIdx.y * TILE + threadIdx.x;  // now a column of out, a row of in
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.x * TILE + threadIdx.y + j;
        if (x < rows && y < cols) out[(long long)y * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

// v3: pad each row of the tile by one float: a column's 32 elements now lie
// 33 floats apart, in 32 different banks, and a warp reads them at once.
extern "C" __global__ void transpose_v3(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)y * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.x * TILE + threadIdx.y + j;
        if (x < rows && y < cols) out[(long long)y * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

// v4: swizzle instead of pad: element (r, c) of the tile is kept at column
// c ^ r of row r, so a row and a column each touch all 32 banks, and no
// shared memory is spent on padding.
extern "C" __global__ void transpose_v4(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int r = threadIdx.y + j, y = blockIdx.y * TILE + r;
        if (x < cols && y < rows) tile[r][threadIdx.x ^ r] = in[(long long)y * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int c = threadIdx.y + j, y = blockIdx.x * TILE + c;
        if (x < rows && y < cols) out[(long long)y * rows + x] = tile[threadIdx.x][c ^ threadIdx.x];
    }
}

// copy_tile is the transposes' control, not a transpose: out (rows × cols)
// = in, through the same 32 × 32 tile in shared memory, launched alike.
// It reads the tile along the rows of in and writes it along the rows of
// out, unturned, so both its global accesses are coalesced and its
// shared-memory accesses, a row a warp, touch 32 banks once each. What
// separates it from the copy is the cost of staging; what separates
// transpose_v2 from it, the turn and its bank conflicts. Each thread reads
// back the element it stored, so the barrier is not needed for the right
// answer; it stays so that the control waits as the transposes wait.
extern "C" __global__ void copy_tile(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)y * cols + x];
    }
    __syncthreads();
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < cols && y < rows) out[(long long)y * cols + x] = tile[threadIdx.y + j][threadIdx.x];
    }
}
