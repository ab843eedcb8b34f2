// Package lessons is the course: a lesson is one folder under lessons/,
// holding lesson.md (the prose, one "## " heading per step) and lesson.go
// (what each step runs), with its recorded results in results/. Adding a
// lesson touches nothing outside its folder and package kernels; run
// go generate ./lessons/all to pick it up.
//
// The lessons, in order:
//
//  1. hello-gpu: the device, a first kernel, the memory hierarchy, and the
//     measured ceilings (copy bandwidth, GEMM throughput)
//  2. vector-add: grid, block and thread; the bounds check; three versions
//     and a block-size sweep against the copy ceiling; an exercise
//  5. matmul: the fp32 ladder from naive to double buffering, then tensor
//     cores in PTX, each against cuBLAS; an exercise
//  6. batched-gemm: forty small products as forty launches or one
//  7. precision: FP32, TF32, FP16, BF16 and FP8 (cuBLASLt) side by side
//
// A step's action is one of ShowKernel, CheckStep, Sweep, ExerciseStep or
// Run. Actions run in an Env: live on a GPU, or in replay, where checks and
// figures come from results recorded on a reference GPU and every figure
// says so.
//
// Every check follows the same rules: fresh random inputs, outputs poisoned
// with NaN before the run, every element compared with a float64 CPU
// reference with a tolerance that follows the precision, at sizes that are
// not multiples of the block size as well as the timed sizes, and again
// after timing.
package lessons
