// Package vectoradd is lesson 2: the first kernel, its launch, its bounds
// check, three versions and their bandwidth against the copy ceiling, and
// what each change to the first bought.
package vectoradd

import (
	"embed"
	"math/rand/v2"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// The ladder's versions, and the control that changes one thing of v3.
const (
	v1       = "vadd_v1"
	v2       = "vadd_v2"
	v3       = "vadd_v3"
	restrict = "vadd_v3_restrict"
)

// large is the size the block sizes and the changes are measured at: 2²⁶
// floats, 268 MB an array, far more than any L2 holds.
var large = lessons.Size{1 << 26}

func init() {
	bench := &lessons.Sweep{Title: "Vector add bandwidth", XLabel: "elements (n)", Memory: true, Impls: []string{v1, v2, v3},
		Sizes: []lessons.Size{{1 << 12}, {1 << 14}, {1 << 16}, {1 << 18}, {1 << 20}, {1 << 22}, {1 << 24}, large}}
	// v1 beside v2 at every block size: the same per-element code, with a
	// block per blockDim.x elements or a grid the GPU holds at once.
	blocks := &lessons.Sweep{Title: "Vector add bandwidth by block size", Problem: byBlock(),
		Sizes: []lessons.Size{large}, Blocks: []int{32, 64, 128, 256, 512, 1024}}
	// Each change beside the version it changes, in interleaved rounds, so
	// that a ratio of a few per cent is not a drift between runs.
	oneAtATime := &lessons.Sweep{Title: "Vector add, one change at a time", XLabel: "elements (n)", Impls: []string{v1, v2, v3, restrict},
		Sizes: []lessons.Size{large}, Rounds: 5}
	lessons.Register(lessons.Def{
		Number: 2, Slug: "vector-add", Files: files, Kernels: "vector_add.cu",
		Problem: problem("vector add", append(lessons.LadderImpls("vector_add.cu"), control)),
		Exercise: &lessons.Exercise{
			File: "vadd_exercise.cu", Kernel: "vadd_exercise", Like: v1, Bench: large,
			Task: "Compute the thread's global index, and add the guard. Then run 'check --sanitize memcheck' as well: " +
				"the check sees what your kernel wrote, memcheck every address it touched.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "memcheck"},
			{File: "foreign.cu"}, // its own name, no extern "C": found by its parameters
			{File: "toolkit_header.cu", NeedsHeaders: true},
			{File: "no_guard.cu", Want: "past the end of c"},
			{File: "no_guard.cu", Sanitize: "memcheck", Want: "Invalid __global__ read"},
			{File: "guard_off_by_one.cu", Want: "past the end of c"},
			{File: "guard_off_by_one.cu", Sanitize: "memcheck", Want: "Invalid __global__ read"},
			// The compiler moves the loads under the guard: nothing reads
			// past the end, for the check or for memcheck.
			{File: "guard_store_only.cu"},
			{File: "guard_store_only.cu", Sanitize: "memcheck"},
			{File: "grid_for_block.cu", Want: "check: c[268] = NaN"},
			{File: "wrong_index.cu", Want: "check: c[256] = NaN"},
			{File: "syntax_error.cu", Want: "does not compile"},
			{File: "endless.cu", Want: "time limit"},
		},
		Actions: map[string]lessons.Action{
			"Kernel":           &lessons.ShowKernel{Names: []string{v1}},
			"Launch":           &lessons.Run{F: launchTable},
			"The bounds check": &lessons.Run{F: boundsCheck, Replay: boundsCheckReplay, Kernel: "vadd_unguarded", Block: 256, Size: lessons.Size{1000}},
			"Check":            &lessons.CheckStep{},
			"Three versions":   &lessons.ShowKernel{},
			"Block size":       blocks,
			"Benchmark":        bench,
			"Counters": &lessons.ProfileStep{Of: bench, Impls: []string{v1, v2, v3},
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColSectors, lessons.ColL1,
					lessons.ColDRAMBusy, lessons.ColInstructions, lessons.ColOccupancy, lessons.ColStalls}},
			"Blocks of 1024": &lessons.ProfileStep{Of: blocks, Impls: []string{v1, v2},
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColDRAMBusy, lessons.ColInstructions, lessons.ColOccupancy}},
			"One change at a time": &lessons.Run{Name: "measure", F: func(env *lessons.Env, l *lessons.Lesson, step string) error {
				return measureChanges(env, l, step, oneAtATime)
			}},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

// problem is c = a + b on float32 vectors, computed by impls: the
// lesson's, the ladder of vector_add.cu and the control.
func problem(name string, impls []lessons.Impl) *lessons.Problem {
	return &lessons.Problem{
		Name: name, DType: "float32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1}, {3}, {1000}, {1023}, {1<<20 + 7}},
		Impls:      impls,
		Setup:      setup,
		Memory:     memory,
		Work:       func(s lessons.Size) float64 { return 12 * float64(s[0]) },
	}
}

// byBlock is the problem of the Block size step: v1 and v2, launched with
// blocks of 1024 threads unless a sweep says otherwise. The sweep sets
// every point's block itself; `profile` runs each impl at its own, so the
// counters of this step are taken at 1024 threads, where v1 falls behind.
func byBlock() *lessons.Problem {
	var impls []lessons.Impl
	for _, im := range lessons.LadderImpls("vector_add.cu") {
		if im.Name == v1 || im.Name == v2 {
			im.Block = 1024
			impls = append(impls, im)
		}
	}
	return problem("vector add, by block size", impls)
}

// control is v3 with one change, __restrict__, which the One change at a
// time step measures beside it; checked like the versions.
var control = lessons.Impl{Name: restrict, Summary: "v3 with __restrict__ on its pointers: a and b loaded through the read-only path"}

// memory is three vectors of n floats and the guard behind c on the
// device; on the host, a and b, their float64 sum, and each vector once
// more on its way through the worker.
func memory(s lessons.Size) lessons.Memory {
	n := int64(s[0])
	return lessons.Memory{Device: 4 * (3*n + guardElems), Host: 8*n + 8*n + 3*4*n}
}

// guardElems is the room left behind c, filled with NaN, where a kernel
// that ignores n would write.
const guardElems = 1024

// vcase is one vector add on the GPU.
type vcase struct {
	env     *lessons.Env
	n       int
	a, b, c gpu.DevicePtr
	want    []float64
}

// inputs returns n random a and b of different magnitudes, a within ±1024
// and b within ±1, and their sum in float64. Most sums then need more bits
// than a float32 has and round, so the check measures float32's rounding:
// operands of one magnitude (both within ±1) add exactly, and the check
// would only ever see an error of 0.
func inputs(n int) (a, b []float32, want []float64) {
	a, b, want = make([]float32, n), make([]float32, n), make([]float64, n)
	for i := range a {
		a[i], b[i] = (rand.Float32()*2-1)*1024, rand.Float32()*2-1
		want[i] = float64(a[i]) + float64(b[i])
	}
	return a, b, want
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	n := s[0]
	a, b, want := inputs(n)
	c := &vcase{env: env, n: n, want: want}
	var err error
	if c.a, c.b, c.c, err = lessons.UploadPair(env, a, b, int64(4*(n+guardElems))); err != nil {
		return nil, err
	}
	return c, nil
}

// Ops launches impl with the grid its version needs.
func (c *vcase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	threads := c.n
	switch impl.Name {
	case v2:
		// As many blocks as the SMs hold at once, and no more: the most
		// threads of block that an SM holds, within its blocks' limit.
		info := c.env.Dev.Info()
		perSM := min(info.MaxThreadsPerSM/block, info.MaxBlocksPerSM)
		threads = min(c.n, info.SMs*perSM*block)
	case v3, restrict:
		threads = max(c.n/4, c.n%4) // one float4 each, and the tail
	}
	return []gpu.Op{gpu.Launch{
		Kernel: k, Grid: gpu.Dim(gpu.Blocks(threads, block)), Block: gpu.Dim(block),
		Args: []gpu.Arg{gpu.Ptr(c.a), gpu.Ptr(c.b), gpu.Ptr(c.c), gpu.Int32(int32(c.n))},
	}}, nil
}

func (c *vcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.c, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.n + guardElems)})
}

// Check compares c with a + b, then checks that nothing was written past n.
func (c *vcase) Check() (numeric.CheckStats, error) {
	out, err := gpu.Download[float32](c.env.Dev, c.c, c.n+guardElems)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	st, err := numeric.Compare("c", out[:c.n], c.want, []int{c.n}, numeric.TolFP32)
	if err != nil {
		return st, err
	}
	if err := numeric.PastTheEnd("c", out[c.n:], c.n); err != nil {
		return st, err
	}
	return st, nil
}

func (c *vcase) Free() {
	c.env.FreeAll(c.a, c.b, c.c)
}
