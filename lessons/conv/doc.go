// Package conv is the 3×3 convolution lessons 10 and 11 run through
// cuDNN: the shape, read from a lessons.Size{N, C, H, W, K}; its work and
// memory; random inputs and the float64 convolution they are checked
// against (Data); the cuDNN graph, with bias and ReLU fused after it or
// not (Graph); and the buffers on the device in NCHW or NHWC (Buffers).
package conv
