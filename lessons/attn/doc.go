// Package attn is scaled dot-product attention as lessons 13 and 14 run
// it: the shape, read from a lessons.Size{B, H, S, D, causal}; inputs
// drawn so that each kind of mistake shows (Data); the float64 reference
// and the check against it; the device buffers with a poisoned guard
// behind each output (Buffers); and lesson 13's chain of launches, cuBLAS
// products around scale, mask and softmax kernels (Chain), which lesson
// 14 times beside flash attention.
//
// It holds no CUDA of its own: the kernels it and the lessons launch are
// in package kernels (attention.cu, softmax.cu, flash_attention.cu).
package attn
