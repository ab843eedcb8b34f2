// Package fusion is lesson 9: sigmoid(a + b·c) as three kernels, two and
// one, against the copy; the same expression fused at run time from its
// text, and as a cuDNN pointwise graph.
package fusion

import (
	"embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"cudarepl/cudnnx"
	"cudarepl/fuse"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/fusecmd"
	"cudarepl/numeric"
	"cudarepl/nvrtc"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// expr is the lesson's expression, as a learner would type it.
const expr = "sigmoid(a + b*c)"

// The impls beyond the ladder of fusion.cu.
const (
	three   = "three kernels"
	two     = "two kernels"
	runtime = "fused at run time"
	cudnn   = "cuDNN graph"
)

// cudnnRow is the row length a vector is shaped into for cuDNN, whose
// pointwise-only engines in 9.14 take rows, not one long row (see
// docs/measurements.md).
const cudnnRow = 1024

// guardElems is the room behind y, filled with NaN, where a kernel that
// ignores n would write.
const guardElems = 1024

// grid is the version launched on a fixed grid, grid-stride, as the
// kernel fused at run time is: the exercise is launched as it is, and
// timed beside it.
const grid = "fusion_grid"

// exerciseMin is the share of the copy's GB/s the exercise must reach at
// 2²⁶. The fused kernels were recorded at 0.92 to 1.06 of the copy there,
// round by round (the one launched on the exercise's grid, fused at run
// time, at 0.92 in its slowest round), and the two-kernel chain at 0.61
// to 0.62.
const exerciseMin = 0.85

func init() {
	var sizes []lessons.Size
	for k := 16; k <= 28; k += 2 {
		sizes = append(sizes, lessons.Size{1 << k})
	}
	// against is the sweep whose versions the recorded profile counted:
	// every way but fusion_grid, the exercise's launch, which it has not
	// measured.
	against := &lessons.Sweep{Title: "sigmoid(a + b·c), fp32", XLabel: "elements (n)", Sizes: sizes, Ladder: true,
		Impls: []string{"fusion_v1", "fusion_v2", three, two, runtime, cudnn}}
	// counted shows its DRAM bytes beside the 16 an element the model
	// predicts for one fused kernel; loads, what the wider loads change.
	counted := &lessons.ProfileStep{Of: against, Impls: []string{three, two, "fusion_v1", "fusion_v2", runtime, cudnn},
		Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColDRAMBusy, lessons.ColSMBusy}}
	loads := &lessons.ProfileStep{Of: against, Impls: []string{"fusion_v1", "fusion_v2", runtime, cudnn},
		Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColSectors, lessons.ColDRAMBusy, lessons.ColSMBusy,
			lessons.ColInstructions, lessons.ColOccupancy, lessons.ColLimiter}}
	// fuse's replay shows what this lesson recorded of the same kernel.
	fusecmd.Recorded(expr, "fusion", runtime)
	lessons.Register(lessons.Def{
		Number: 9, Slug: "fusion", Files: files, Kernels: "fusion.cu", Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "fusion_exercise.cu", Kernel: "fusion_exercise", Like: grid, Bench: lessons.Size{1 << 26},
			Fast: &lessons.Speed{Min: exerciseMin,
				Why: "neighbouring threads should read neighbouring elements, so that a warp's loads share sectors (lesson 4); a thread per contiguous run makes each load of a warp touch 32 sectors"},
			Task: fmt.Sprintf("Fuse mul_f, add_f and sigmoid_f into fusion_exercise: each input read once and y written once, "+
				"every element i < n computed though the grid has fewer threads than elements, "+
				"a warp's threads reading neighbouring floats at each load. At 2²⁶ it must reach at least %.2f of the copy's GB/s.", exerciseMin),
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution_float4.cu"},
			{File: "chunk_per_thread.cu", Want: "correct but too slow"},
			{File: "float4_no_tail.cu", Want: "never written"},
			{File: "wrong_expression.cu", Want: "check: y["},
			{File: "one_pass.cu", Want: "never written"},
		},
		Actions: map[string]lessons.Action{
			"Three kernels":      &lessons.ShowKernel{Names: []string{"mul_f", "add_f", "sigmoid_f"}},
			"Two, then one":      &lessons.ShowKernel{Names: []string{"fma_f", "fusion_v1"}},
			"Wider loads":        &lessons.ShowKernel{Names: []string{"fusion_v2"}},
			"Check":              &lessons.CheckStep{},
			"Against the copy":   against,
			"Bytes, counted":     counted,
			"Loads, counted":     loads,
			"Fusion at run time": &lessons.Run{F: atRunTime, Replay: atRunTimeReplay(against)},
			"Exercise":           &lessons.ExerciseStep{},
		},
	})
}

func problem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "sigmoid(a + b·c)", DType: "float32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1}, {3}, {1000}, {1024}, {4099}, {1<<20 + 7}, {1 << 20}},
		Setup:      setup,
		Memory:     memory,
		// GB/s counts what the fused kernel must move: three inputs read
		// and the output written, 16 bytes an element, for every impl.
		Work: func(s lessons.Size) float64 { return 16 * float64(s[0]) },
	}
	p.Impls = append(lessons.LadderImpls("fusion.cu"),
		lessons.Impl{Name: grid,
			Summary: "fusion_v1 as a grid-stride loop on at most two waves of blocks, as the kernel fused at run time is launched: the exercise's launch"},
		lessons.Impl{Name: three, Library: true, Kernels: []string{"mul_f", "add_f", "sigmoid_f"}, Bytes: bytesPer(32),
			Summary: "mul_f, add_f, sigmoid_f: an operation a kernel, two intermediates through memory, 32 bytes an element"},
		lessons.Impl{Name: two, Library: true, Kernels: []string{"fma_f", "sigmoid_f"}, Bytes: bytesPer(24),
			Summary: "fma_f, sigmoid_f: a + b·c fused by hand, one intermediate through memory, 24 bytes an element"},
		lessons.Impl{Name: runtime, Library: true,
			Summary: "the kernel package fuse writes from the text \"" + expr + "\", compiled by NVRTC at run time: the REPL's fuse"},
		lessons.Impl{Name: cudnn, Library: true,
			Summary: "the same expression as a graph of cuDNN pointwise operations, fused by cuDNN's runtime fusion engine",
			Requires: func(s lessons.Size) error {
				if s[0]%cudnnRow != 0 {
					return fmt.Errorf("cuDNN takes the vector as rows of %d: n must be a multiple of %d", cudnnRow, cudnnRow)
				}
				return nil
			}})
	return p
}

// memory is a, b, c, two intermediates for the unfused ways, and y with
// its guard on the device; on the host, the inputs, the float64 answer,
// and y on its way back.
func memory(s lessons.Size) lessons.Memory {
	n := int64(s[0])
	return lessons.Memory{Device: 4 * (5*n + n + guardElems), Host: 3*4*n + 8*n + 4*(n+guardElems)}
}

// fcase is one problem on the GPU.
type fcase struct {
	env        *lessons.Env
	n          int
	a, b, c, y gpu.DevicePtr
	t1, t2     gpu.DevicePtr // intermediates of the unfused ways
	want       []float64
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	n := s[0]
	r := rand.New(rand.NewPCG(uint64(n), 9))
	in := make([][]float32, 3)
	for i := range in {
		in[i] = make([]float32, n)
		for j := range in[i] {
			in[i][j] = float32(8*r.Float64() - 4) // a + b·c spans about ±20: both of sigmoid's tails
		}
	}
	c := &fcase{env: env, n: n, want: make([]float64, n)}
	for i := range c.want {
		c.want[i] = reference(float64(in[0][i]), float64(in[1][i]), float64(in[2][i]))
	}
	var err error
	ptrs := []*gpu.DevicePtr{&c.a, &c.b, &c.c}
	for i, p := range ptrs {
		if *p, err = gpu.Upload(env.Dev, in[i]); err != nil {
			c.Free()
			return nil, err
		}
	}
	for _, p := range []*gpu.DevicePtr{&c.t1, &c.t2} {
		if *p, err = env.Dev.Alloc(4 * int64(n)); err != nil {
			c.Free()
			return nil, err
		}
	}
	if c.y, err = env.Dev.Alloc(4 * int64(n+guardElems)); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// reference is sigmoid(a + b·c) in float64.
func reference(a, b, c float64) float64 { return 1 / (1 + math.Exp(-(a + b*c))) }

// Ops launches impl: the ladder's kernels a thread an element (v2 a
// float4), the unfused ways as their chains, fusion_grid (and so the
// exercise) and the runtime kernel grid-stride, cuDNN's graph as one op.
func (c *fcase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	// one launches k with a thread for each of threads items and ptrs, then
	// n, as its arguments.
	one := func(k gpu.Kernel, threads, block int, ptrs ...gpu.DevicePtr) gpu.Op {
		args := make([]gpu.Arg, 0, len(ptrs)+1)
		for _, p := range ptrs {
			args = append(args, gpu.Ptr(p))
		}
		return gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(threads, block)), Block: gpu.Dim(block), Args: append(args, gpu.Int32(int32(c.n)))}
	}
	switch impl.Name {
	case "fusion_v1":
		return []gpu.Op{one(k, c.n, block, c.a, c.b, c.c, c.y)}, nil
	case "fusion_v2":
		return []gpu.Op{one(k, c.n/4+1, block, c.a, c.b, c.c, c.y)}, nil // a float4 each, and one more thread for the tail
	case grid:
		return []gpu.Op{one(k, min(c.n, c.twoWaves(block)*block), block, c.a, c.b, c.c, c.y)}, nil // grid-stride
	case three, two:
		ks, err := c.kernels(impl.Kernels)
		if err != nil {
			return nil, err
		}
		if impl.Name == three {
			return []gpu.Op{one(ks[0], c.n, 256, c.b, c.c, c.t1), one(ks[1], c.n, 256, c.a, c.t1, c.t2), one(ks[2], c.n, 256, c.t2, c.y)}, nil
		}
		return []gpu.Op{one(ks[0], c.n, 256, c.a, c.b, c.c, c.t1), one(ks[1], c.n, 256, c.t1, c.y)}, nil
	case runtime:
		e, err := fuse.Parse(expr)
		if err != nil {
			return nil, err
		}
		k, err := c.env.Kernel(nvrtc.Source{Name: "fuse.cu", Code: e.Kernel("fused")}, "fused") // compiled and loaded once, then cached
		if err != nil {
			return nil, err
		}
		blocks := min(gpu.Blocks(c.n, 256), c.twoWaves(256)) // grid-stride
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(blocks), Block: gpu.Dim(256),
			Args: []gpu.Arg{gpu.Ptr(c.a), gpu.Ptr(c.b), gpu.Ptr(c.c), gpu.Ptr(c.y), gpu.Int64(int64(c.n))}}}, nil
	case cudnn:
		e, err := fuse.Parse(expr)
		if err != nil {
			return nil, err
		}
		g := cudnnx.New(expr)
		sh := cudnnx.Rows(1, c.n/cudnnRow, cudnnRow)
		in := []*cudnnx.Tensor{g.Tensor("a", gpu.FP32, sh), g.Tensor("b", gpu.FP32, sh), g.Tensor("c", gpu.FP32, sh)}
		y, err := g.Expression(e, in)
		if err != nil {
			return nil, err
		}
		y.Output(gpu.FP32)
		op, err := g.Op(cudnnx.Bind{in[0]: c.a, in[1]: c.b, in[2]: c.c, y: c.y}, cudnnx.Options{})
		if err != nil {
			return nil, err
		}
		return []gpu.Op{op}, nil
	}
	return nil, errors.New("sigmoid(a + b·c) has no variant " + impl.Name)
}

// twoWaves is how many blocks of block threads fill every SM twice: the
// grid of the grid-stride kernels where n needs more.
func (c *fcase) twoWaves(block int) int { return c.env.Dev.Info().TwoWaves(block) }

// kernels loads the named kernels of fusion.cu (a learner's edit of one
// comes in through Env.Kernel).
func (c *fcase) kernels(names []string) ([]gpu.Kernel, error) {
	out := make([]gpu.Kernel, len(names))
	for i, name := range names {
		var err error
		if out[i], err = c.env.FileKernel("fusion.cu", name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *fcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.y, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.n + guardElems)})
}

// Check compares y with the float64 expression, then checks that nothing
// was written past n.
func (c *fcase) Check() (numeric.CheckStats, error) {
	out, err := gpu.Download[float32](c.env.Dev, c.y, c.n+guardElems)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	st, err := numeric.Compare("y", out[:c.n], c.want, []int{c.n}, numeric.TolFP32)
	if err != nil {
		return st, err
	}
	return st, numeric.PastTheEnd("y", out[c.n:], c.n)
}

func (c *fcase) Free() { c.env.FreeAll(c.a, c.b, c.c, c.t1, c.t2, c.y) }

// atRunTime shows what the REPL's fuse does with the lesson's expression,
// the whole of it at 2²⁶.
func atRunTime(env *lessons.Env, _ *lessons.Lesson, _ string) error {
	return fusecmd.Run(env, expr, fusecmd.Elements)
}

// atRunTimeReplay is atRunTime without a GPU: it shows the kernel fuse
// writes and what each way moves, then that kernel's time as swept, the
// lesson's sweep, recorded it ("fused at run time", at fuse's size);
// fuse's own unfused chain was not recorded.
func atRunTimeReplay(swept *lessons.Sweep) func(*lessons.Env, *lessons.Lesson, string) error {
	return func(env *lessons.Env, l *lessons.Lesson, _ string) error {
		e, err := fuse.Parse(expr)
		if err != nil {
			return err
		}
		_, stages := e.Unfused("step")
		moved := fuse.StagesBytes(stages)
		fmt.Fprintf(env.Out, "%s\nUnfused, %s is %d kernels moving %d bytes an element; fused, one moving %d.\n"+
			"No GPU here: 'fuse %s' compiles and times both on one.\n",
			e.Kernel("fused"), expr, len(stages), moved, e.BytesPerElement(), expr)
		size := lessons.Size{fusecmd.Elements}.String()
		var rs []lessons.Result
		for _, r := range env.Latest(l, swept) {
			if r.Variant == runtime && r.Size == size && r.Measured() {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			return nil
		}
		r := rs[0]
		env.PrintTable(&lessons.Table{
			Headers: []string{"kernel", "size", "time (µs)", r.Unit, "of the copy"}, Right: []bool{false, false, true, true, true},
			Rows: [][]string{{"fused", size, fmt.Sprintf("%.1f", 1000*r.MedianMs), fmt.Sprintf("%.0f", r.Throughput),
				lessons.RatioOf(r, lessons.Result{Throughput: r.Ceiling, Rounds: r.CeilingRounds}).Text("%.2f")}},
			Notes: []string{fmt.Sprintf("The fused kernel as the sweep above recorded it (%q), %s. ", runtime, env.About(rs)) +
				"The unfused chain fuse writes was not recorded; the lesson's own, three kernels, is in the sweep."},
		})
		return nil
	}
}

// bytesPer is the DRAM traffic of a way that moves b bytes an element.
func bytesPer(b float64) func(lessons.Size) float64 {
	return func(s lessons.Size) float64 { return b * float64(s[0]) }
}
