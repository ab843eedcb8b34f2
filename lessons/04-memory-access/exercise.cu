// Exercise: out (cols × rows) = inᵀ, in (rows × cols), fp32, through a tile
// in shared memory, as fast as transpose_v3.
//
// This kernel is launched like transpose_v3: blocks of 32 × 8 threads,
// one block a 32 × 32 tile, grid (ceil(cols / 32), ceil(rows / 32)). Each
// thread moves four elements. As it stands it is transpose_v1, correct
// but slow: its writes go down the columns of out. Stage the tile in
// shared memory (the TODOs), so that both the reads of in and the writes
// of out go along rows, then have it judged: 'check' in the REPL, or run
// its cell in a notebook. It is expected to fail until you do: a pass
// needs the right values on every check shape, and at least 0.80 of
// transpose_v3's GB/s at 8192 × 8192, timed beside it.

#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void transpose_exercise(const float* in, float* out, int rows, int cols) {
    // TODO: a __shared__ tile for the block's 32 × 32 elements, laid out so
    // that a warp reading one of its columns does not wait on one bank
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        // TODO: put the element in the tile instead of writing it to out
        if (x < cols && y < rows) out[(long long)x * rows + y] = in[(long long)y * cols + x];
    }
    // TODO: every thread waits until the whole tile is in
    // TODO: write the tile to out along out's rows. Which 32 × 32 tile of
    // out does this block's tile become, which element of it does each
    // thread write so that a warp's 32 writes are neighbours, and where in
    // the tile is that element?
}
