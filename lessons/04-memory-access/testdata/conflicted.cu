// A planted mistake: the tile staged without padding. Every value is
// right, but reading a column of the tile hits one bank 32 times, as
// transpose_v2 does, so it is too slow to pass.
#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void transpose_exercise(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
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
