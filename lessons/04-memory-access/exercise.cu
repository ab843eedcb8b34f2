// Exercise: out (cols × rows) = inᵀ, in (rows × cols), fp32, through a tile
// in shared memory.
//
// This kernel is launched like transpose_v3: blocks of 32 × 8 threads,
// one block a 32 × 32 tile, grid (ceil(cols / 32), ceil(rows / 32)). Each
// thread moves four elements. As it stands it is transpose_v1, correct
// but slow: its writes go down the columns of out. Stage the tile in
// shared memory (the TODOs), so that both the reads and the writes go
// along rows, then have it judged: 'check' in the REPL, or run its cell in
// a notebook.

#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void transpose_exercise(const float* in, float* out, int rows, int cols) {
    // TODO: a __shared__ tile, one float wider than it is tall
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        // TODO: store into the tile instead, at row threadIdx.y + j, column threadIdx.x
        if (x < cols && y < rows) out[(long long)x * rows + y] = in[(long long)y * cols + x];
    }
    // TODO: wait until the whole tile is in, then write it out along the
    // rows of out: thread (tx, ty) writes out[(blockIdx.x·32 + ty + j)·rows
    // + blockIdx.y·32 + tx], which is the tile's row tx, column ty + j
}
