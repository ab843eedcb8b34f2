// Package vectoradd is lesson 2: the first kernel, its launch, its bounds
// check, three versions and their bandwidth against the copy ceiling.
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

func init() {
	bench := &lessons.Sweep{Title: "Vector add bandwidth", XLabel: "elements (n)", Memory: true,
		Sizes: []lessons.Size{{1 << 12}, {1 << 14}, {1 << 16}, {1 << 18}, {1 << 20}, {1 << 22}, {1 << 24}, {1 << 26}}}
	lessons.Register(lessons.Def{
		Number: 2, Slug: "vector-add", Files: files, Kernels: "vector_add.cu",
		Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "vadd_exercise.cu", Kernel: "vadd_exercise", Like: "vadd_v1", Bench: lessons.Size{1 << 26},
			Task: "Compute the thread's global index, and guard the memory accesses with it.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "foreign.cu"}, // its own name, no extern "C": found by its parameters
			{File: "toolkit_header.cu", NeedsHeaders: true},
			{File: "no_guard.cu", Want: "past the end of c"},
			{File: "no_guard.cu", Sanitize: "memcheck", Want: "Invalid __global__"},
			{File: "wrong_index.cu", Want: "check: c["},
			{File: "syntax_error.cu", Want: "does not compile"},
			{File: "endless.cu", Want: "time limit"},
		},
		Actions: map[string]lessons.Action{
			"Kernel":           &lessons.ShowKernel{Names: []string{"vadd_v1"}},
			"Launch":           &lessons.Run{F: launchTable},
			"The bounds check": &lessons.Run{F: boundsCheck, Replay: boundsCheckReplay, Kernel: "vadd_unguarded", Block: 256, Size: lessons.Size{1000}},
			"Check":            &lessons.CheckStep{},
			"Three versions":   &lessons.ShowKernel{},
			"Block size": &lessons.Sweep{Title: "Vector add bandwidth by block size", Impls: []string{"vadd_v1"},
				Sizes: []lessons.Size{{1 << 26}}, Blocks: []int{32, 64, 128, 256, 512, 1024}},
			"Benchmark": bench,
			"Counters": &lessons.ProfileStep{Of: bench, Impls: []string{"vadd_v1", "vadd_v2", "vadd_v3"},
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColSectors,
					lessons.ColDRAMBusy, lessons.ColInstructions, lessons.ColStalls}},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

// problem is c = a + b on float32 vectors, with the ladder of vector_add.cu.
func problem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "vector add", DType: "float32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1}, {3}, {1000}, {1023}, {1<<20 + 7}},
		Setup:      setup,
		Memory:     memory,
		Work:       func(s lessons.Size) float64 { return 12 * float64(s[0]) },
	}
	p.Impls = lessons.LadderImpls("vector_add.cu")
	return p
}

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

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	n := s[0]
	a, b := make([]float32, n), make([]float32, n)
	want := make([]float64, n)
	for i := range a {
		a[i], b[i] = rand.Float32()*2-1, rand.Float32()*2-1
		want[i] = float64(a[i]) + float64(b[i])
	}
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
	case "vadd_v2":
		// Enough blocks to fill every SM at full occupancy, and no more.
		info := c.env.Dev.Info()
		threads = min(c.n, info.SMs*info.MaxThreadsPerSM)
	case "vadd_v3":
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
