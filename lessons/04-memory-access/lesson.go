// Package memaccess is lesson 4: how the order and width of a kernel's
// memory accesses decide its speed: strided reads, arrays of structs
// against structs of arrays, bytes in flight (float4, __restrict__,
// __launch_bounds__), and a transpose staged through shared memory.
package memaccess

import (
	"embed"
	"fmt"
	"slices"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// guardElems is the room behind each output, poisoned, where a kernel
// that ignores its bounds would write.
const guardElems = 1024

// fastEnough is the share of transpose_v3's GB/s at 8192² the exercise
// must reach. Recorded on the H100, the unpadded tile (transpose_v2) ran
// at 0.62 of it (1703 against 2752 GB/s) and the padded one is v3 itself:
// 0.80 passes a conflict-free tile with room for noise and fails a tile
// whose columns still sit in one bank.
const fastEnough = 0.80

// The benchmarks' sizes: big enough that nothing stays in the 50 MB L2.
const (
	strideN   = 1 << 24 // floats read by the stride sweep: 64 MiB
	inflightN = 1 << 26 // floats copied by the bytes-in-flight sweep: 256 MiB
)

// copyKernels are the copies of the bytes-in-flight steps, in the order
// the lesson brings them in.
var copyKernels = []string{"copy_scalar", "copy_unrolled", "copy_restrict", "copy_float4", "copy_float4_restrict", "copy_deep", "copy_deep_bounded"}

func init() {
	var strides []lessons.Size
	for s := 1; s <= 32; s *= 2 {
		strides = append(strides, lessons.Size{strideN, s})
	}
	var particles []lessons.Size
	for k := 16; k <= 24; k += 2 {
		particles = append(particles, lessons.Size{1 << k})
	}
	var perSM []lessons.Size
	for b := 1; b <= 16; b *= 2 {
		perSM = append(perSM, lessons.Size{inflightN, b})
	}
	var squares []lessons.Size
	for n := 1024; n <= 8192; n *= 2 {
		squares = append(squares, lessons.Size{n, n})
	}
	stride, sums, aos, inflight := strideProblem(), sumProblem(), particleProblem(), inflightProblem()
	// The sweeps whose profiles a later step shows beside the prose.
	strided := &lessons.Sweep{Title: "Strided reads, 2²⁴ floats", XLabel: "stride (floats between neighbouring threads' reads)",
		Problem: stride, Sizes: strides, XDim: 1, ProfileSizes: strides}
	readsAlone := &lessons.Sweep{Title: "Strided reads summed, no writes, 2²⁴ floats", XLabel: "stride (floats between neighbouring threads' reads)",
		Problem: sums, Sizes: strides, XDim: 1, ProfileSizes: strides}
	layouts := &lessons.Sweep{Title: "x + vx·dt: array of structs against struct of arrays", XLabel: "particles (n)",
		Problem: aos, Sizes: particles}
	copies := &lessons.Sweep{Title: "Copies with few threads, 2²⁶ floats", XLabel: "blocks of 256 threads per SM (grid = blocks × SMs)",
		Problem: inflight, Sizes: perSM, XDim: 1}
	transposes := &lessons.Sweep{Title: "Transpose, fp32", XLabel: "matrix size (square, one side)", Sizes: squares, Ladder: true}
	lessons.Register(lessons.Def{
		Number: 4, Slug: "memory-access", Files: files, Kernels: "memory_access.cu", Problem: transposeProblem(),
		Exercise: &lessons.Exercise{
			File: "transpose_exercise.cu", Kernel: "transpose_exercise", Like: "transpose_v3", Bench: lessons.Size{8192, 8192},
			Fast: &lessons.Speed{Against: "transpose_v3", Min: fastEnough,
				Why: "a tile of 32 × 32 floats puts a column's 32 floats in one bank; pad each row of the tile by one float"},
			Task: fmt.Sprintf("Stage the block's 32 × 32 tile in shared memory, so that the reads of in and the writes of out both go along rows, "+
				"without bank conflicts: a pass needs at least %.2f of transpose_v3's GB/s at 8192 × 8192, timed beside it.", fastEnough),
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "racecheck"},
			{File: "solution.cu", Sanitize: "synccheck"},
			{File: "conflicted.cu", Want: "correct but too slow"},  // no padding: 32-way conflicts
			{File: "padded_rows.cu", Want: "correct but too slow"}, // tile[TILE + 1][TILE]: still 32-way
			{File: "no_sync.cu", Sanitize: "racecheck", Want: "hazard on shared memory"},
			{File: "sync_in_bounds.cu", Sanitize: "synccheck", Want: "Barrier error detected"},
			{File: "swapped.cu", Want: "check: out["},
			{File: "blocks_unswapped.cu", Want: "check: out["},
		},
		Actions: map[string]lessons.Action{
			"Coalescing": &lessons.ShowKernel{Names: []string{"read_stride"}},
			"Stride":     strided,
			"Sectors and DRAM bytes": &lessons.ProfileStep{Of: strided,
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColSectors}},
			"Reads alone": readsAlone,
			"Reads alone, counted": &lessons.ProfileStep{Of: readsAlone,
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColSectors, lessons.ColDRAMBusy, lessons.ColStalls}},
			"Arrays of structs": &lessons.ShowKernel{Names: []string{"advance_aos", "advance_soa"}},
			"Structs of arrays": layouts,
			"What each layout reads": &lessons.ProfileStep{Of: layouts,
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColSectors, lessons.ColDRAMBusy}},
			"Bytes in flight":                &lessons.ShowKernel{Names: []string{"copy_scalar", "copy_float4"}},
			"Restrict":                       &lessons.ShowKernel{Names: []string{"copy_unrolled", "copy_restrict", "copy_float4_restrict"}},
			"Launch bounds":                  &lessons.ShowKernel{Names: []string{"copy_deep", "copy_deep_bounded"}},
			"What the compiler made of them": &lessons.Run{Name: "measure", F: compiled},
			"Latency and occupancy":          copies,
			"One block an SM, counted": &lessons.ProfileStep{Of: copies,
				Columns: []string{lessons.ColTime, lessons.ColDRAMBusy, lessons.ColL1, lessons.ColInstructions, lessons.ColOccupancy, lessons.ColLimiter, lessons.ColStalls}},
			"Transpose":               &lessons.ShowKernel{Names: []string{"transpose_v1"}},
			"A tile in shared memory": &lessons.ShowKernel{Names: []string{"transpose_v2"}},
			"Bank conflicts":          &lessons.ShowKernel{Names: []string{"transpose_v3", "transpose_v4", tileCopy}},
			"Check":                   &lessons.CheckStep{More: []*lessons.Problem{stride, sums, aos, inflight}},
			"Against the copy":        transposes,
			"Bank conflicts, counted": &lessons.ProfileStep{Of: transposes,
				Columns: []string{lessons.ColTime, lessons.ColPredicted, lessons.ColL2, lessons.ColDRAMBusy, lessons.ColConflicts, lessons.ColStalls}},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

// moveWork is what a kernel that reads n floats and writes n moves: 8n
// bytes.
func moveWork(n int) float64 { return 8 * float64(n) }

// moveMemory is an input of n floats and an output of n with its guard,
// on the device, and on the host the input and the output read back.
func moveMemory(n int) lessons.Memory {
	b := 4 * int64(2*n+guardElems)
	return lessons.Memory{Device: b, Host: b}
}

func strideProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "strided read", DType: "float32", Reference: "the input, bit for bit", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: strideChecks,
		Impls: []lessons.Impl{{Name: "read_stride", Summary: "y read in order, x read down the columns of a rows × stride matrix",
			Requires: strideDivides}},
		Setup: func(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
			rows, stride := s[0]/s[1], s[1]
			return asCase(setupMove(env, s, s[0], "y", []int{s[0]}, func(i int) int { return i%rows*stride + i/rows }))
		},
		Memory:    func(s lessons.Size) lessons.Memory { return moveMemory(s[0]) },
		Work:      func(s lessons.Size) float64 { return moveWork(s[0]) },
		SizeLabel: func(s lessons.Size) string { return fmt.Sprintf("n=%d stride %d", s[0], s[1]) },
	}
}

// strideDivides refuses a size whose n is not a whole number of rows of
// stride floats.
func strideDivides(s lessons.Size) error {
	if s[0]%s[1] != 0 {
		return fmt.Errorf("n = %d is not a multiple of the stride %d", s[0], s[1])
	}
	return nil
}

// strideChecks are the stride problems' check sizes: n and the stride,
// with rows that are not a whole number of blocks.
var strideChecks = []lessons.Size{{1, 1}, {3, 3}, {1000, 8}, {4096, 32}, {33 * 31, 31}, {1<<20 + 7, 1}}

// sumProblem is the stride sweep's control: the same reads, summed a
// block at a time instead of written out.
func sumProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "strided read, summed", DType: "float32", Reference: "each block's sum in float64", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: strideChecks,
		Impls: []lessons.Impl{{Name: "read_stride_sum", Summary: "read_stride's reads, with one sum written a block instead of a float a thread",
			Block: sumBlock, Requires: strideDivides}},
		Setup: setupSums,
		// x and the sums, a float for every block (at least 32 floats);
		// on the host x, its float64 sums and the sums read back.
		Memory: func(s lessons.Size) lessons.Memory {
			sums := int64(s[0]/32 + s[1])
			return lessons.Memory{Device: 4 * (int64(s[0]) + sums), Host: 4*int64(s[0]) + 12*sums}
		},
		// GB/s counts the 4 bytes a float the kernel reads: the sums are
		// one float in sumBlock.
		Work:      func(s lessons.Size) float64 { return 4 * float64(s[0]) },
		SizeLabel: func(s lessons.Size) string { return fmt.Sprintf("n=%d stride %d", s[0], s[1]) },
	}
}

// sumBlock is read_stride_sum's block: a float of sums for every 256 read.
const sumBlock = 256

// scase is a strided read whose kernel writes one sum a block: sums[c ×
// blocks + b] is the sum of column c's rows b·block to (b+1)·block − 1.
type scase struct {
	env          *lessons.Env
	x            []float32
	dx, dsums    gpu.DevicePtr
	rows, stride int
	block        int // the block of the last Ops, which decides the sums' layout
}

// setupSums uploads n random floats for a strided read summed a block at
// a time.
func setupSums(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	n := s[0]
	c := &scase{env: env, x: numeric.RandomFloats(n, uint64(n)), rows: n / s[1], stride: s[1], block: sumBlock}
	var err error
	if c.dx, err = gpu.Upload(env.Dev, c.x); err != nil {
		return nil, err
	}
	// Room for the sums of the smallest block a launch may use, 32.
	if c.dsums, err = env.Dev.Alloc(4 * int64(gpu.Blocks(c.rows, 32)*c.stride)); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// Ops launches read_stride_sum as read_stride is launched: a column a
// blockIdx.y; block must be a whole number of warps.
func (c *scase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	if block%32 != 0 || block > 1024 {
		return nil, fmt.Errorf("%s sums a warp at a time: a block of %d threads is not a whole number of warps up to 1024", impl.Name, block)
	}
	c.block = block
	return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.rows, block), c.stride), Block: gpu.Dim(block),
		Args: []gpu.Arg{gpu.Ptr(c.dx), gpu.Ptr(c.dsums), gpu.Int32(int32(c.rows)), gpu.Int32(int32(c.stride))}}}, nil
}

func (c *scase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dsums, Value: lessons.PoisonWord(gpu.FP32), Count: int64(gpu.Blocks(c.rows, 32) * c.stride)})
}

// Check compares every block's sum with the float64 sum of the floats the
// block should have read.
func (c *scase) Check() (numeric.CheckStats, error) {
	blocks := gpu.Blocks(c.rows, c.block)
	got, err := gpu.Download[float32](c.env.Dev, c.dsums, blocks*c.stride)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	want := make([]float64, blocks*c.stride)
	for col := range c.stride {
		for r := range c.rows {
			want[col*blocks+r/c.block] += float64(c.x[r*c.stride+col])
		}
	}
	return numeric.Compare("sums", got, want, []int{c.stride, blocks}, numeric.TolFP32Sum(c.block))
}

func (c *scase) Free() { c.env.FreeAll(c.dx, c.dsums) }

func inflightProblem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "copy, bytes in flight", DType: "float32", Reference: "the input, bit for bit", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1, 1}, {3, 1}, {1000, 2}, {4099, 1}, {1<<20 + 7, 4}, {1 << 20, 16}},
		Setup: func(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
			return asCase(setupMove(env, s, s[0], "y", []int{s[0]}, func(i int) int { return i }))
		},
		Memory:    func(s lessons.Size) lessons.Memory { return moveMemory(s[0]) },
		Work:      func(s lessons.Size) float64 { return moveWork(s[0]) },
		SizeLabel: func(s lessons.Size) string { return fmt.Sprintf("n=%d, %d blocks/SM", s[0], s[1]) },
	}
	summaries := map[string]string{
		"copy_scalar":          "a float a load: 4 bytes in flight a thread",
		"copy_unrolled":        "four a trip, written out; x and y may overlap, so still 4 bytes",
		"copy_restrict":        "copy_unrolled with __restrict__: four loads before four stores, 16 bytes",
		"copy_float4":          "a float4 a load: 16 bytes from one instruction",
		"copy_float4_restrict": "four float4 loads before their stores: 64 bytes",
		"copy_deep":            "eight float4 loads, ordered by hand: 128 bytes, 32 registers for them",
		"copy_deep_bounded":    "copy_deep with __launch_bounds__(256, 8): 32 registers a thread in all",
	}
	for _, name := range copyKernels {
		p.Impls = append(p.Impls, lessons.Impl{Name: name, Summary: summaries[name]})
	}
	return p
}

func particleProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "x + vx·dt", DType: "float32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1}, {3}, {1000}, {4099}, {1<<20 + 7}},
		Impls: []lessons.Impl{
			{Name: "advance_aos", Summary: "from an array of 24-byte structs: a warp loads 768 bytes to use 256"},
			{Name: "advance_soa", Summary: "from a struct of arrays: every byte loaded is used"},
		},
		Setup: setupParticles,
		// The struct array, x and vx again as arrays, and the output;
		// on the host the same, and the output read back.
		Memory: func(s lessons.Size) lessons.Memory {
			b := 4 * int64(6*s[0]+2*s[0]+s[0]+guardElems)
			return lessons.Memory{Device: b, Host: b}
		},
		// GB/s counts what the kernel needs: x and vx read, x' written.
		Work: func(s lessons.Size) float64 { return 12 * float64(s[0]) },
	}
}

func transposeProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "transpose", DType: "float32", Reference: "the input, bit for bit", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1, 1}, {1, 7}, {3, 5}, {33, 31}, {100, 257}, {1000, 999}, {4099, 17}, {2048, 2048}},
		Impls: append(lessons.LadderImpls("memory_access.cu"), lessons.Impl{Name: tileCopy,
			Summary: "the control: the same tiles through shared memory, read and written along rows, not turned: what staging costs, without bank conflicts"}),
		Setup: func(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
			rows, cols := s[0], s[1] // out is cols × rows; copy_tile's, rows × cols
			c, err := setupMove(env, s, rows*cols, "out", []int{cols, rows}, func(i int) int { return i%rows*cols + i/rows })
			if err == nil {
				c.plain = []int{rows, cols}
			}
			return asCase(c, err)
		},
		Memory:    func(s lessons.Size) lessons.Memory { return moveMemory(s[0] * s[1]) },
		Work:      func(s lessons.Size) float64 { return moveWork(s[0] * s[1]) },
		SizeLabel: func(s lessons.Size) string { return fmt.Sprintf("%d × %d", s[0], s[1]) },
	}
}

// tileCopy is the transposes' control: their tile, copied, not turned.
const tileCopy = "copy_tile"

// mcase is a problem whose kernels only move floats: y[i] = x[from(i)].
type mcase struct {
	env  *lessons.Env
	size lessons.Size
	x    []float32
	dx   gpu.DevicePtr
	dy   gpu.DevicePtr
	n    int // elements of x and of y, before y's guard

	name string        // y's name in a failed check
	dims []int         // y's shape in a failed check
	from func(int) int // where y[i] comes from in x

	// plain, in a transpose's case, is y's shape where the kernel copies
	// x unturned (copy_tile), and copied says the last launch was that.
	plain  []int
	copied bool
}

// setupMove uploads n random floats for size s of a problem whose kernels
// move x[from(i)] to y[i], y being called name and shaped dims.
func setupMove(env *lessons.Env, s lessons.Size, n int, name string, dims []int, from func(int) int) (*mcase, error) {
	c := &mcase{env: env, size: s, x: numeric.RandomFloats(n, uint64(n)), n: n, name: name, dims: dims, from: from}
	var err error
	if c.dx, err = gpu.Upload(env.Dev, c.x); err != nil {
		return nil, err
	}
	if c.dy, err = env.Dev.Alloc(4 * int64(n+guardElems)); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// asCase is setupMove's case as a lessons.Case: nil, not a nil *mcase,
// where it failed.
func asCase(c *mcase, err error) (lessons.Case, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Ops launches impl: the stride read a column a blockIdx.y; the copies on
// size[1] blocks an SM, grid-stride; the transposes and their control a
// 32 × 32 tile a block of 32 × 8 threads.
func (c *mcase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	x, y := gpu.Ptr(c.dx), gpu.Ptr(c.dy)
	switch {
	case impl.Name == "read_stride":
		n, stride := c.size[0], c.size[1]
		rows := n / stride
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(rows, block), stride), Block: gpu.Dim(block),
			Args: []gpu.Arg{x, y, gpu.Int32(int32(rows)), gpu.Int32(int32(stride))}}}, nil
	case slices.Contains(copyKernels, impl.Name):
		grid := c.size[1] * c.env.Dev.Info().SMs
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(grid), Block: gpu.Dim(block), Args: []gpu.Arg{x, y, gpu.Int32(int32(c.size[0]))}}}, nil
	default: // a transpose, or its control
		rows, cols := c.size[0], c.size[1]
		c.copied = impl.Name == tileCopy
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(cols, 32), gpu.Blocks(rows, 32)), Block: gpu.Dim(32, 8),
			Args: []gpu.Arg{x, y, gpu.Int32(int32(rows)), gpu.Int32(int32(cols))}}}, nil
	}
}

func (c *mcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dy, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.n + guardElems)})
}

// Check compares y with the elements of x the kernel should have moved
// there (x itself after copy_tile), bit for bit, then checks that nothing
// was written past its end.
func (c *mcase) Check() (numeric.CheckStats, error) {
	got, err := gpu.Download[float32](c.env.Dev, c.dy, c.n+guardElems)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	from, dims := c.from, c.dims
	if c.copied {
		from, dims = func(i int) int { return i }, c.plain
	}
	st, err := numeric.CompareMove(c.name, got[:c.n], c.x, from, dims)
	if err != nil {
		return st, err
	}
	return st, numeric.PastTheEnd(c.name, got[c.n:], c.n)
}

func (c *mcase) Free() { c.env.FreeAll(c.dx, c.dy) }
