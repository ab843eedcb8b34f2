// Package softmax is lesson 12: softmax over the rows of a matrix, from one
// thread per row to rows held in registers and clusters of blocks sharing
// a row, against cuDNN and the copy ceiling.
package softmax

import (
	"embed"
	"fmt"
	"math"
	"math/rand/v2"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// elements is how many a benchmark point holds: rows × columns = 2²⁶.
const elements = 1 << 26

func init() {
	var widths, narrow []lessons.Size
	for _, cols := range []int{128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 1 << 18} {
		widths = append(widths, lessons.Size{elements / cols, cols})
		if cols <= 4096 {
			narrow = append(narrow, lessons.Size{elements / cols, cols})
		}
	}
	// The profile's rows: up to and past the widths v3 keeps in L1, and the
	// narrowest, where a block per row has least to do.
	var profileWidths, readWidths []lessons.Size
	for _, cols := range []int{128, 1024, 4096, 8192, 32768} {
		profileWidths = append(profileWidths, lessons.Size{elements / cols, cols})
	}
	readWidths, narrowest := profileWidths[1:], profileWidths[:1]
	// One change at a time: the narrowest width, one a block per row
	// fills, and two past what v3 keeps in L1.
	var changeWidths []lessons.Size
	for _, cols := range []int{128, 2048, 8192, 32768} {
		changeWidths = append(changeWidths, lessons.Size{elements / cols, cols})
	}
	var halfWidths []lessons.Size
	for _, cols := range []int{1024, 4096, 16384, 32768} {
		halfWidths = append(halfWidths, lessons.Size{elements / cols, cols})
	}
	half := halfProblem()
	bandwidth := &lessons.Sweep{Title: "Softmax bandwidth, 2²⁶ elements", XLabel: "columns (rows × columns = 2²⁶)",
		Impls: ladder, Sizes: widths, XDim: 1, ProfileSizes: profileWidths}
	// v2 → v3 one change at a time, and v4 with v5's block: controls, each
	// measured in a run of its own beside the versions it sits between.
	oneChange := &lessons.Sweep{Title: "v2 to v3, one change at a time, 2²⁶ elements", XLabel: "columns (rows × columns = 2²⁶)",
		Impls: []string{"softmax_v2", shfl, shflFastExp, "softmax_v3"}, Sizes: changeWidths, XDim: 1}
	packedRows := &lessons.Sweep{Title: "Narrow rows: v4 with v5's block, 2²⁶ elements", XLabel: "columns (rows × columns = 2²⁶)",
		Impls: []string{"softmax_v4", packed, "softmax_v5"}, Sizes: narrow, XDim: 1}
	warps := []string{lessons.ColTime, lessons.ColSMBusy, lessons.ColInstructions, lessons.ColOccupancy, lessons.ColDRAMBusy, lessons.ColStalls}
	lessons.Register(lessons.Def{
		Number: 12, Slug: "softmax", Files: files, Kernels: "softmax.cu", Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "softmax_exercise.cu", Kernel: "softmax_exercise", Like: "softmax_v2", Bench: lessons.Size{elements / 4096, 4096},
			Task: "Reduce the threads' maxima and sums across the block, through shared memory, so that every thread has the row's. " +
				"Then run 'check --sanitize racecheck': a missing barrier can pass the checks. A barrier that only some threads reach hangs the kernel until the time limit stops it.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "racecheck"},
			{File: "solution.cu", Sanitize: "synccheck"},
			{File: "solution_shuffle.cu"},
			{File: "solution_shuffle.cu", Sanitize: "racecheck"},
			{File: "no_barrier_after_max.cu", Sanitize: "racecheck", Want: "hazard on shared memory"},
			// On the H100 it hangs, plainly and under synccheck: the time
			// limit stops it.
			{File: "barrier_in_branch.cu", Want: "ran past the"},
			{File: "own_partial.cu", Want: "check: y["},
			{File: "max_pads_zero.cu", Want: "not finite"},
			// Mistakes in the lines the starter gives, which the Check step
			// says its sizes catch.
			{File: "no_max.cu", Want: "not finite"},
			{File: "skips_tail.cu", Want: "check: y["},
		},
		Actions: map[string]lessons.Action{
			"One thread per row":      &lessons.ShowKernel{Names: []string{"softmax_v1"}},
			"Why subtract the max":    &lessons.Run{F: stability, Replay: stabilityReplay, Kernel: "softmax_unsafe", Block: 256, Size: lessons.Size{rowKinds, 1000}},
			"A block per row":         &lessons.ShowKernel{Names: []string{"softmax_v2"}},
			"Warp shuffles":           &lessons.ShowKernel{Names: []string{"softmax_v3"}},
			"Online softmax":          &lessons.ShowKernel{Names: []string{"softmax_v4"}},
			"One read":                &lessons.ShowKernel{Names: []string{"softmax_v5"}},
			"Rows wider than a block": &lessons.ShowKernel{Names: []string{"softmax_v6"}},
			"Check":                   &lessons.CheckStep{},
			"Bandwidth":               bandwidth,
			"One change at a time":    measureOwn(oneChange),
			"Narrow rows":             measureOwn(packedRows),
			"Narrow rows, counted": &lessons.ProfileStep{Of: bandwidth, Sizes: narrowest,
				Impls: []string{"softmax_v2", "softmax_v3", "softmax_v4", "softmax_v5", cudnnName}, Columns: warps},
			"Where the reads come from": &lessons.ProfileStep{Of: bandwidth, Sizes: readWidths, Impls: []string{"softmax_v3", "softmax_v4", "softmax_v5"},
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColL1, lessons.ColL2}},
			"cuDNN at wide rows": &lessons.ProfileStep{Of: bandwidth, Sizes: readWidths, Impls: []string{"softmax_v5", cudnnName},
				Columns: []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColDRAMBusy, lessons.ColStalls}},
			"Half the bytes": &lessons.ShowKernel{Names: []string{"softmax_h"}},
			"fp16 check":     &lessons.CheckStep{Problem: half},
			"fp16 bandwidth": &lessons.Sweep{Title: "fp16 softmax bandwidth, 2²⁶ elements", XLabel: "columns (rows × columns = 2²⁶)",
				Problem: half, Sizes: halfWidths, XDim: 1},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

// measureOwn is a step that measures sw, a sweep of controls, and shows
// what it measured: on a GPU, a run of its own; without one, what was
// recorded for the step, or that nothing was.
func measureOwn(sw *lessons.Sweep) *lessons.Run {
	return &lessons.Run{Name: "measure", F: func(env *lessons.Env, l *lessons.Lesson, step string) error { return sw.Do(env, l, step) }}
}

// The versions' limits, the controls' names, and the library's name as an
// impl.
const (
	v5MaxCols   = 32 * 1024     // 32 floats in registers for each of up to 1024 threads
	v6MinCols   = 16 * 1024     // narrower rows fill the GPU with a block each
	v6MaxCols   = 8 * v5MaxCols // 8 blocks of the cluster, each v5's most
	shfl        = "softmax_v2_shfl"
	shflFastExp = "softmax_v2_shfl_fastexp"
	packed      = "softmax_v4_packed"
	cudnnName   = "cuDNN"
	cudnnHalf   = "cuDNN fp16"
)

// ladder is what the Bandwidth step measures: the versions and cuDNN,
// without the controls that other steps measure beside them.
var ladder = []string{"softmax_v1", "softmax_v2", "softmax_v3", "softmax_v4", "softmax_v5", "softmax_v6", cudnnName}

// fitsRegisters refuses rows wider than v5 holds in registers, for v5 and
// the kernels launched as it is.
func fitsRegisters(s lessons.Size) error {
	if s[1] > v5MaxCols {
		return fmt.Errorf("holds at most %d columns in registers", v5MaxCols)
	}
	return nil
}

func problem() *lessons.Problem {
	impls := lessons.LadderImpls("softmax.cu")
	for i := range impls {
		switch impls[i].Name {
		case "softmax_v5":
			impls[i].Requires = fitsRegisters
		case "softmax_v6":
			impls[i].MinArch = "sm_90" // thread-block clusters
			impls[i].Requires = func(s lessons.Size) error {
				if s[1] < v6MinCols || s[1] > v6MaxCols {
					return fmt.Errorf("a cluster per row is for %d to %d columns", v6MinCols, v6MaxCols)
				}
				return nil
			}
		}
	}
	impls = append(impls,
		lessons.Impl{Name: shfl, Summary: "v2 with its reductions by warp shuffles; expf and the division kept"},
		lessons.Impl{Name: shflFastExp, Summary: "v2 with warp shuffles and __expf; the division kept (v3 multiplies by 1/d)"},
		lessons.Impl{Name: packed, Summary: "v4's two reads in v5's block: a row's threads and several rows a block", Requires: fitsRegisters},
		lessons.Impl{Name: cudnnName, Summary: "cudnnSoftmaxForward, accurate mode (the row's max subtracted)", Library: true})
	return &lessons.Problem{
		Name: "softmax", DType: "float32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1, 1}, {4, 3}, {8, 255}, {8, 257}, {12, 1000}, {8, 4099}, {64, 2048}, {8, 20000}, {4, 70000}},
		Impls:      impls,
		Setup:      func(env *lessons.Env, s lessons.Size) (lessons.Case, error) { return setup(env, s, gpu.FP32) },
		Memory:     func(s lessons.Size) lessons.Memory { return memory(s, 4) },
		Work:       func(s lessons.Size) float64 { return 8 * float64(s[0]) * float64(s[1]) }, // each element read once and written once
		SizeLabel:  sizeLabel,
	}
}

// halfProblem is softmax on fp16 rows, computed in fp32.
func halfProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "softmax, fp16", DType: "float16", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1, 1}, {4, 3}, {8, 257}, {12, 1000}, {8, 4096}, {4, 30000}},
		Impls: []lessons.Impl{
			{Name: "softmax_h", Summary: "v5 on fp16: 16-byte loads of 8 halves, the arithmetic in fp32", Requires: fitsRegisters},
			{Name: cudnnHalf, Summary: "cudnnSoftmaxForward on fp16, accurate mode", Library: true},
		},
		Setup:     func(env *lessons.Env, s lessons.Size) (lessons.Case, error) { return setup(env, s, gpu.FP16) },
		Memory:    func(s lessons.Size) lessons.Memory { return memory(s, 2) },
		Work:      func(s lessons.Size) float64 { return 4 * float64(s[0]) * float64(s[1]) },
		SizeLabel: sizeLabel,
	}
}

func sizeLabel(s lessons.Size) string { return fmt.Sprintf("%d × %d", s[0], s[1]) }

// guardElems is the room behind y, poisoned, where a kernel that runs past
// the last row would write.
const guardElems = 1024

// memory is x and y (and the guard) on the device; on the host x, its
// float64 reference when checked, y read back, and x and y on their way
// through the worker.
func memory(s lessons.Size, elem int64) lessons.Memory {
	n := int64(s[0]) * int64(s[1])
	return lessons.Memory{Device: 2*elem*n + 4*guardElems, Host: 4*n + 8*n + 4*n + 2*elem*n}
}

// The kinds of row the inputs cycle through: each catches a different
// mistake.
const (
	rowRandom   = iota // N(0, 4²): the usual case
	rowLarge           // 100 … 180: exp overflows without the max subtracted
	rowNegative        // −200 … −120: exp underflows to 0 if the max starts at 0
	rowWide            // −30 … 30: a wide spread of magnitudes
	rowKinds
)

// input fills a rows×cols matrix, row r of kind r mod rowKinds, from seed:
// the same seed gives the same matrix, however many goroutines fill it.
func input(rows, cols int, seed uint64) []float32 {
	x := make([]float32, rows*cols)
	byRows(rows, cols, func(r0, r1 int) {
		rng := rand.New(rand.NewPCG(seed, uint64(r0)))
		for r := r0; r < r1; r++ {
			row := x[r*cols : (r+1)*cols]
			for c := range row {
				switch r % rowKinds {
				case rowRandom:
					row[c] = float32(4 * rng.NormFloat64())
				case rowLarge:
					row[c] = 100 + 80*rng.Float32()
				case rowNegative:
					row[c] = -200 + 80*rng.Float32()
				case rowWide:
					row[c] = -30 + 60*rng.Float32()
				}
			}
		}
	})
	return x
}

// byRows calls f on bands of rows [r0, r1) on every CPU: benchmark points
// hold 2²⁶ elements, whose inputs and reference take seconds on one core.
func byRows(rows, cols int, f func(r0, r1 int)) { numeric.Parallel(rows, bandRows(cols), f) }

// bandRows is the height of byRows' bands: about 2¹⁶ elements each.
func bandRows(cols int) int { return max(1, (1<<16)/cols) }

// reference is softmax over each row in float64.
func reference(x []float32, rows, cols int) []float64 {
	y := make([]float64, len(x))
	byRows(rows, cols, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			row, out := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, float64(v))
			}
			d := 0.0
			for c, v := range row {
				out[c] = math.Exp(float64(v) - m)
				d += out[c]
			}
			for c := range out {
				out[c] /= d
			}
		}
	})
	return y
}

// compare checks y against want: each element within tol of its value
// relative to want + 1/cols, the mean of a row. An element far below the
// mean may round to 0 (exp underflows), but a row scaled wrong, or a NaN,
// fails wherever it is.
func compare(y []float32, want []float64, rows, cols int, tol float64) (numeric.CheckStats, error) {
	type band struct {
		worst float64
		bad   int
		first *numeric.CheckError
	}
	bands := make([]band, (rows+bandRows(cols)-1)/bandRows(cols))
	floor := 1 / float64(cols)
	byRows(rows, cols, func(r0, r1 int) {
		b := &bands[r0/bandRows(cols)]
		for i := r0 * cols; i < r1*cols; i++ {
			g, w := float64(y[i]), want[i]
			e := math.Abs(g-w) / (w + floor)
			if math.IsNaN(e) {
				e = math.Inf(1)
			}
			b.worst = math.Max(b.worst, e)
			if e <= tol {
				continue
			}
			b.bad++
			if b.first == nil {
				b.first = &numeric.CheckError{Name: "y", Index: []int{i / cols, i % cols}, Got: g, Want: w, Tol: tol}
			}
		}
	})
	st := numeric.CheckStats{Tol: tol, N: len(want)}
	var first *numeric.CheckError
	bad := 0
	for _, b := range bands {
		st.MaxRelErr = math.Max(st.MaxRelErr, b.worst)
		bad += b.bad
		if first == nil {
			first = b.first
		}
	}
	if first != nil {
		first.Bad, first.Total = bad, len(want)
		return st, first
	}
	return st, nil
}

// scase is one softmax on the GPU.
type scase struct {
	env        *lessons.Env
	rows, cols int
	typ        gpu.DType // of x and y: FP32 or FP16
	x          []float32
	want       []float64 // the reference, computed at the first check
	dx, dy     gpu.DevicePtr
}

func setup(env *lessons.Env, s lessons.Size, typ gpu.DType) (lessons.Case, error) {
	rows, cols := s[0], s[1]
	c := &scase{env: env, rows: rows, cols: cols, typ: typ, x: input(rows, cols, uint64(rows)<<32|uint64(cols))}
	var err error
	if typ == gpu.FP16 {
		h := make([]uint16, len(c.x))
		byRows(rows, cols, func(r0, r1 int) {
			for i := r0 * cols; i < r1*cols; i++ {
				h[i] = gpu.Float16Bits(c.x[i])
				c.x[i] = gpu.Float16From(h[i]) // the reference sees what the kernel sees
			}
		})
		c.dx, err = gpu.Upload(env.Dev, h)
	} else {
		c.dx, err = gpu.Upload(env.Dev, c.x)
	}
	if err != nil {
		return nil, err
	}
	if c.dy, err = env.Dev.Alloc(4 * int64(c.words()+guardElems)); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// Ops launches impl as its version is launched.
func (c *scase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	args := []gpu.Arg{gpu.Ptr(c.dx), gpu.Ptr(c.dy), gpu.Int32(int32(c.rows)), gpu.Int32(int32(c.cols))}
	launch := gpu.Launch{Kernel: k, Grid: gpu.Dim(c.rows), Block: gpu.Dim(block), Args: args} // a block per row
	switch impl.Name {
	case cudnnName, cudnnHalf:
		return []gpu.Op{cudnnx.Softmax{Rows: c.rows, Cols: c.cols, Type: c.typ, X: c.dx, Y: c.dy}}, nil
	case "softmax_v1":
		launch.Grid = gpu.Dim(gpu.Blocks(c.rows, block)) // a thread per row
	case "softmax_v5", "softmax_h", packed:
		tx, ty := kernels.SoftmaxBlock(c.cols)
		launch.Grid, launch.Block = gpu.Dim(gpu.Blocks(c.rows, ty)), gpu.Dim(tx, ty)
	case "softmax_v6":
		if info := c.env.Dev.Info(); info.Major < 9 {
			// Compiled for an older GPU, v6's body is empty (softmax.cu).
			return nil, fmt.Errorf("softmax_v6 needs thread-block clusters, compute capability 9.0 or newer; this GPU is %d.%d", info.Major, info.Minor)
		}
		launch.Grid, launch.Block = gpu.Dim(8*c.rows), gpu.Dim(v6Block(c.cols))
	}
	return []gpu.Op{launch}, nil
}

// v6Block is v6's threads per block: each of the cluster's 8 blocks holds
// an eighth of the row, 32 floats a thread, in whole warps.
func v6Block(cols int) int {
	chunk := (cols + 7) / 8
	return 32 * max(1, (chunk+32*32-1)/(32*32))
}

// words is how many 4-byte words y takes; the guard follows them.
func (c *scase) words() int { return (c.typ.Size()*c.rows*c.cols + 3) / 4 }

// Poison fills y and the guard with NaN.
func (c *scase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dy, Value: lessons.PoisonWord(c.typ), Count: int64(c.words() + guardElems)})
}

// Check compares y with the float64 softmax of x, then checks that nothing
// was written past the last row.
func (c *scase) Check() (numeric.CheckStats, error) {
	y, guard, err := c.download()
	if err != nil {
		return numeric.CheckStats{}, err
	}
	if c.want == nil {
		c.want = reference(c.x, c.rows, c.cols)
	}
	tol := numeric.TolFP32Sum(c.cols)
	if c.typ == gpu.FP16 {
		tol = numeric.TolHalf
	}
	st, err := compare(y, c.want, c.rows, c.cols, tol)
	if err != nil {
		return st, err
	}
	for i, v := range guard {
		if v != lessons.PoisonWord(c.typ) {
			return st, fmt.Errorf("check: word %d behind y was written, past the end of y (%d rows × %d)", i, c.rows, c.cols)
		}
	}
	return st, nil
}

// download reads y back as float32, and the guard's words behind it.
func (c *scase) download() ([]float32, []uint32, error) {
	n := c.rows * c.cols
	if c.typ != gpu.FP16 {
		all, err := gpu.Download[uint32](c.env.Dev, c.dy, n+guardElems)
		if err != nil {
			return nil, nil, err
		}
		y := make([]float32, n)
		for i := range y {
			y[i] = math.Float32frombits(all[i])
		}
		return y, all[n:], nil
	}
	h, err := gpu.Download[uint16](c.env.Dev, c.dy, n)
	if err != nil {
		return nil, nil, err
	}
	guard, err := gpu.Download[uint32](c.env.Dev, c.dy+gpu.DevicePtr(4*c.words()), guardElems)
	if err != nil {
		return nil, nil, err
	}
	y := make([]float32, n)
	byRows(c.rows, c.cols, func(r0, r1 int) {
		for i := r0 * c.cols; i < r1*c.cols; i++ {
			y[i] = gpu.Float16From(h[i])
		}
	})
	return y, guard, nil
}

func (c *scase) Free() { c.env.FreeAll(c.dx, c.dy) }
