// A planted mistake: the tile turned, but written back to the block's own
// place. The write uses blockIdx.x for the column of out and blockIdx.y
// for its row, as the read of in did, so tile (bx, by) of in lands at
// (bx, by) of out instead of (by, bx). A matrix of one tile, or a tile on
// the diagonal, comes out right; elsewhere out has the wrong tiles, and on
// a matrix that is not square some of out is never written.
#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void transpose_exercise(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)y * cols + x];
    }
    __syncthreads();
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < rows && y < cols) out[(long long)y * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}
