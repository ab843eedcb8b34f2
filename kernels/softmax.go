package kernels

// SoftmaxBlock is the block softmax_v5, softmax_h and softmax_v4_packed
// (softmax.cu) are launched with for rows of cols: tx threads a row, the
// fewest power of two that holds the row at 32 values a thread, and ty
// rows, so that narrow rows still make blocks of 256 threads. The grid is
// rows/ty blocks, rounded up.
func SoftmaxBlock(cols int) (tx, ty int) {
	tx = 1
	for 32*tx < cols {
		tx *= 2
	}
	return tx, max(1, 256/tx)
}
