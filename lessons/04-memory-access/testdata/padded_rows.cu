// A planted mistake: the padding on the wrong dimension. tile[TILE + 1][TILE]
// adds a row, not a column: each row is still 32 floats, so element (r, c)
// is word 32r + c and a column's 32 elements all sit in bank c. Every value
// is right, and the column reads still conflict 32 ways, as in an unpadded
// tile, so it is too slow to pass.
#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void transpose_exercise(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE + 1][TILE];
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
