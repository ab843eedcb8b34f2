// Package lessons is the course: a lesson is one folder under lessons/,
// holding lesson.md (the prose, one "## " heading per step), lesson.go
// (what each step runs), lesson_test.go (its own test), testdata/ (its
// planted kernels), results/ (what was recorded on a reference GPU) and,
// where it has an exercise, exercise.cu (the starter), with its kernels in
// one file of package kernels.
//
// Package lessons itself is the framework the folders register with:
// steps and their actions, checks and sweeps, the judge, results, tables
// and figures. What two lessons share lives beside them in a package of
// its own (attn for lessons 13 and 14, conv for 10 and 11), as does the
// fuse command's glue (fusecmd); the CPU references and comparisons are
// package numeric.
//
// The lessons, in order:
//
//  1. hello-gpu: Hello, GPU
//  2. vector-add: Vector add
//  3. transfers: Transfers
//  4. memory-access: Memory access
//  5. matmul: Matrix multiplication
//  6. batched-gemm: Batched GEMM
//  7. precision: Precision
//  8. launch-and-graphs: Launches, allocation and graphs
//  9. fusion: Fusion
//  10. cudnn-conv: cuDNN convolutions
//  11. cudnn-fusion: Fused cuDNN graphs
//  12. softmax: Softmax
//  13. attention: Attention as a chain of kernels
//  14. flash-attention: Flash attention
//  16. multi-gpu: Several GPUs
//
// Adding a lesson is adding its folder and its kernels file, then running
// "go generate ./..." from the repository's root: that registers it
// (lessons/all), lists it above, writes its notebook and refreshes the
// golden files. Nothing else is edited by hand. The folder's lesson.go
// embeds the folder in one line and registers a Def, the one place the
// lesson's number and slug are written (the folder's name repeats them,
// and a test in lessons/all holds the two to agree):
//
//	//go:embed lesson.md exercise.cu results testdata
//	var files embed.FS
//
//	func init() {
//		lessons.Register(lessons.Def{Number: 2, Slug: "vector-add", Files: files, …})
//	}
//
// Its lesson_test.go calls lessontest.Run(t), which finds the lesson by
// the folder it runs in.
//
// Open is the one way to a GPU: it gives an Env, live on the GPU or, where
// there is none, in replay, where checks and figures come from results
// recorded on a reference GPU and every figure says so. Env.LiveOr is the
// one place that decides which: a step says what it does in each case
// (Env.Measured, Run.Replay) and never asks. An Env is a session (the GPU,
// what was compiled and measured) seen through a View (where output goes,
// Ctrl-C, sizes given in place of a sweep's); a copy made by WithView
// shares the session and carries its own view, and nothing is set on an
// Env and cleared after a call.
//
// A step's action is one of ShowKernel, CheckStep, Sweep, ExerciseStep or
// Run, given to the Def as a pointer. A new kind of action is one type in
// one file: Kind and Do, and the methods of the small interfaces in
// action.go that fit it (the problems it runs, the kernels it shows, the
// sizes it sweeps, the kernel it launches, the kind of results it records,
// the figures it draws), which the framework asks for by one type
// assertion each. Env.Judge judges a learner's kernel like one of a
// lesson's versions, or a plan of the work (Plans) for an exercise that is
// not a kernel, and Env.Sanitize runs checks under compute-sanitizer.
//
// Every check follows the same rules: fresh random inputs, outputs poisoned
// with NaN before the run, every element compared with a float64 CPU
// reference with a tolerance that follows the precision, at sizes that are
// not multiples of the block size as well as the timed sizes, and again
// after timing. A size whose memory (Problem.Memory) is more than is free
// is refused before anything is allocated; a kernel that times out or
// faults has its remaining sizes skipped.
package lessons
