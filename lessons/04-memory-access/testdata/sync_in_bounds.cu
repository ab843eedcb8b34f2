// A planted mistake: the barrier inside the bounds test. In a tile that
// lies wholly inside the matrix every thread reaches it, four times; in a
// tile on the matrix's edge the threads past the edge never do, while
// their neighbours wait there, and the threads that skip it go on to read
// the tile before the others have filled it. compute-sanitizer's synccheck
// reports the barrier reached by part of a warp, even on the runs where
// the values come out right.
#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void transpose_exercise(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < cols && y < rows) {
            tile[threadIdx.y + j][threadIdx.x] = in[(long long)y * cols + x];
            __syncthreads();
        }
    }
    x = blockIdx.y * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.x * TILE + threadIdx.y + j;
        if (x < rows && y < cols) out[(long long)y * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}
