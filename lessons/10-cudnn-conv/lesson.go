// Package cudnnconv is lesson 10: one convolution through cuDNN's legacy
// algorithms and through its graph API, in NCHW and NHWC, fp32 and fp16,
// which engine the graph API picks at each batch size, and, as the
// exercise, the convolution written as its loops.
package cudnnconv

import (
	"embed"
	"fmt"
	"strings"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/conv"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// benchShape is the convolution the lesson measures: a ResNet-style 3×3
// layer on 112×112 feature maps.
var benchShape = lessons.Size{32, 64, 112, 112, 64}

// batches are the batch sizes the layouts sweep and the engine table run.
var batches = []int{1, 4, 8, 16, 32}

// direct is the course's convolution as its loops, in kernels/conv.cu: the
// version the exercise is judged like.
const direct = "conv_direct"

// graphs are the impls that run the convolution as a cuDNN graph, in the
// order the sweep and the engine table show them.
var graphs = []string{"graph NHWC fp16", "graph NCHW fp16", "graph NHWC fp32", "graph NCHW fp32"}

func init() {
	var sweep []lessons.Size
	for _, n := range batches {
		sweep = append(sweep, lessons.Size{n, 64, 112, 112, 64})
	}
	lessons.Register(lessons.Def{
		Number: 10, Slug: "cudnn-conv", Files: files, Kernels: "conv.cu", Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "conv_direct_exercise.cu", Kernel: "conv_direct_exercise", Like: direct, Bench: benchShape,
			Task: "Write the 3×3 convolution as its loops: one thread per output element of y (NHWC), " +
				"summing filter k's 3×3×C weights times the input window centred on its pixel, " +
				"zeros outside the image, the filter laid on the window as cuDNN lays it.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "window_off_by_one.cu", Want: "check: y: relative error"},
			{File: "flipped_filter.cu", Want: "check: y: relative error"},
			{File: "nchw_indexing.cu", Want: "check: y: relative error"},
		},
		Actions: map[string]lessons.Action{
			"A convolution as a graph": &lessons.Run{Name: "show", F: showGraph},
			"Check":                    &lessons.CheckStep{},
			"Legacy algorithms":        &lessons.Run{Name: "measure", F: algorithms},
			"Layouts and precision": &lessons.Sweep{Title: "cuDNN 3×3 convolution", XLabel: "batch (N), 64×112×112 → 64",
				Sizes: sweep, Impls: graphs},
			"Which engine ran": &lessons.Run{Name: "measure", F: engines},
			"Exercise":         &lessons.ExerciseStep{},
		},
	})
}

// variant is one way to store and compute the convolution.
type variant struct {
	dt   gpu.DType
	nhwc bool
}

// variants are the buffers each impl runs on: the graphs in their type and
// layout, the direct kernel on the fp32 NHWC ones.
var variants = map[string]variant{
	"graph NHWC fp16": {gpu.FP16, true},
	"graph NCHW fp16": {gpu.FP16, false},
	"graph NHWC fp32": {gpu.FP32, true},
	"graph NCHW fp32": {gpu.FP32, false},
	direct:            {gpu.FP32, true},
}

func problem() *lessons.Problem {
	ladder := lessons.LadderImpls("conv.cu") // conv_direct
	for i := range ladder {
		ladder[i].Peak, ladder[i].Footprint = gpu.PeakFP32, conv.Footprint(4)
	}
	return &lessons.Problem{
		Name: "3×3 convolution (cuDNN)", DType: "float16 / float32", Unit: "TFLOP/s",
		// Two shapes with C and K multiples of 8, the fast path of cuDNN's
		// fp16 kernels, and two with neither.
		CheckSizes: []lessons.Size{{2, 8, 10, 10, 16}, {3, 16, 13, 7, 24}, {2, 3, 9, 11, 5}, {1, 12, 7, 5, 20}},
		// cuDNN computes fp32 convolutions on TF32 tensor cores where it
		// may, so TF32's peak bounds them, not FP32's.
		// A case keeps every variant's buffers, but a run touches only
		// its own: that decides whether the L2 is flushed between runs.
		Impls: append(ladder,
			lessons.Impl{Name: "graph NHWC fp16", Summary: "channels innermost, fp16 data, fp32 accumulation: tensor cores", Library: true, Peak: gpu.PeakFP16, Footprint: conv.Footprint(2)},
			lessons.Impl{Name: "graph NCHW fp16", Summary: "the same numbers with W innermost", Library: true, Peak: gpu.PeakFP16, Footprint: conv.Footprint(2)},
			lessons.Impl{Name: "graph NHWC fp32", Summary: "fp32 data, channels innermost", Library: true, Peak: gpu.PeakTF32, Footprint: conv.Footprint(4)},
			lessons.Impl{Name: "graph NCHW fp32", Summary: "fp32 data, W innermost", Library: true, Peak: gpu.PeakTF32, Footprint: conv.Footprint(4)},
		),
		Setup:     setup,
		Memory:    memory,
		Work:      conv.FLOPs,
		SizeLabel: conv.Label,
	}
}

// ccase holds the inputs in both types, uploaded per layout as impls ask.
type ccase struct {
	env      *lessons.Env
	s        conv.Shape
	data     map[gpu.DType]*conv.Data
	bufs     map[variant]*conv.Buffers
	last     variant
	lastImpl string
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	sh := conv.Of(s)
	return &ccase{env: env, s: sh, bufs: map[variant]*conv.Buffers{},
		data: map[gpu.DType]*conv.Data{gpu.FP16: conv.NewData(sh, gpu.FP16), gpu.FP32: conv.NewData(sh, gpu.FP32)}}, nil
}

// Ops is the direct kernel k (the course's, or a learner's judged like
// it) as one thread per output element, or a graph's execution.
func (c *ccase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	v, ok := variants[impl.Name]
	if !ok {
		return nil, fmt.Errorf("convolution has no variant %q", impl.Name)
	}
	b, ok := c.bufs[v]
	if !ok {
		var err error
		if b, err = c.data[v.dt].Upload(c.env.Dev, v.dt, v.nhwc); err != nil {
			return nil, err
		}
		c.bufs[v] = b
	}
	c.last, c.lastImpl = v, impl.Name
	s := c.s
	if impl.Name == direct {
		outs := s.N * s.H * s.W * s.K
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(outs, block)), Block: gpu.Dim(block),
			Args: []gpu.Arg{gpu.Ptr(b.X), gpu.Ptr(b.W), gpu.Ptr(b.Y),
				gpu.Int32(int32(s.N)), gpu.Int32(int32(s.C)), gpu.Int32(int32(s.H)), gpu.Int32(int32(s.W)), gpu.Int32(int32(s.K))}}}, nil
	}
	g, x, w, _, y := conv.Graph(impl.Name, s, v.dt, v.nhwc, false)
	op, err := g.Op(b.Bind(x, w, nil, y), cudnnx.Options{})
	if err != nil {
		return nil, err
	}
	return []gpu.Op{op}, nil
}

func (c *ccase) Poison() error { return c.bufs[c.last].Poison(c.env.Dev) }

// Check compares the last variant's output with the float64 convolution.
// The graphs' fp32 is held to the fp16 bound too: cuDNN may compute fp32
// convolutions with TF32 tensor cores, which keep 10 bits of mantissa. The
// direct kernel sums in fp32 on the fp32 units, and is held to fp32's.
func (c *ccase) Check() (numeric.CheckStats, error) {
	got, err := c.bufs[c.last].Output(c.env.Dev)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	tol := numeric.TolHalf
	if c.lastImpl == direct {
		tol = numeric.TolFP32Reduction
	}
	return c.data[c.last.dt].Check(got, false, tol)
}

// memory is the buffers of every variant, kept once uploaded: fp16 and
// fp32, each in two layouts (the direct kernel runs on fp32 NHWC's). On
// the host, each type keeps its own float64 inputs.
func memory(s lessons.Size) lessons.Memory {
	h, f := conv.Memory(2, 2)(s), conv.Memory(4, 2)(s)
	return lessons.Memory{Device: h.Device + f.Device, Host: 2 * f.Host}
}

func (c *ccase) Free() {
	for _, b := range c.bufs {
		b.Free(c.env.Dev)
	}
}

// showGraph prints the cuDNN graph of the measured convolution: no GPU
// needed, since a graph is data until it is built.
func showGraph(env *lessons.Env, l *lessons.Lesson, step string) error {
	for _, v := range []string{"graph NHWC fp16", "graph NCHW fp32"} {
		g, _, _, _, _ := conv.Graph(v, conv.Of(benchShape), variants[v].dt, variants[v].nhwc, false)
		fmt.Fprintln(env.Out, g)
	}
	return nil
}

// legacyCase is one convolution the algorithm table measures: a type and
// a layout, and for fp32 whether TF32 tensor cores are allowed.
type legacyCase struct {
	variant
	tf32 bool
}

// legacyCases are NCHW fp32 on the fp32 units and with TF32 allowed, then
// NHWC fp16: each group of rows is followed by the graph API's pick for
// the same type and layout, timed the same way (graphOf).
var legacyCases = []legacyCase{{variant{gpu.FP32, false}, false}, {variant{gpu.FP32, false}, true}, {variant{gpu.FP16, true}, false}}

// graphOf is the graph impl a legacy case is set beside, or "" for none:
// fp32 on the fp32 units has no graph counterpart here, since the graph
// API may use TF32.
func (lc legacyCase) graphOf() string {
	switch {
	case lc.dt == gpu.FP16 && lc.nhwc:
		return "graph NHWC fp16"
	case lc.dt == gpu.FP32 && !lc.nhwc && lc.tf32:
		return "graph NCHW fp32"
	}
	return ""
}

// name labels a row of the case: its layout, type and math, then what.
func (lc legacyCase) name(what string) string {
	layout := "NCHW"
	if lc.nhwc {
		layout = "NHWC"
	}
	math := ""
	if lc.dt == gpu.FP32 {
		math = ", FP32 units"
		if lc.tf32 {
			math = ", TF32 allowed"
		}
	}
	return fmt.Sprintf("%s %s%s: %s", layout, lc.dt, math, what)
}

// algorithms times every legacy algorithm on the measured convolution, in
// NCHW fp32 (on the fp32 units, then with TF32 allowed) and NHWC fp16, and
// beside each the graph API's pick timed the same way; live, or the
// recorded table.
func algorithms(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		var rs []lessons.Result
		sh := conv.Of(benchShape)
		data := map[gpu.DType]*conv.Data{}
		for _, lc := range legacyCases {
			if data[lc.dt] == nil {
				data[lc.dt] = conv.NewData(sh, lc.dt)
			}
			b, err := data[lc.dt].Upload(env.Dev, lc.dt, lc.nhwc)
			if err != nil {
				return nil, err
			}
			out, err := legacyRows(env, l, step, lc, b)
			b.Free(env.Dev)
			if err != nil {
				return nil, err
			}
			rs = append(rs, out...)
		}
		return rs, nil
	})
	if !ok {
		return err
	}
	t := &lessons.Table{
		Headers: []string{"layout, type: algorithm", "time (µs)", "TFLOP/s", "workspace (MiB)", "status"},
		Right:   []bool{false, true, true, true, false},
		Notes: []string{conv.Label(benchShape) + ", 3×3, padding 1; every row timed alike: 5 runs to warm up, then 9 back to back, " +
			"GPU time between events, no L2 flush (the sweep below flushes) · " + lessons.ResultSet{Results: rs}.Source()},
	}
	for _, r := range rs {
		us, tf := "—", "—"
		if r.MedianMs > 0 {
			us, tf = fmt.Sprintf("%.1f", 1000*r.MedianMs), fmt.Sprintf("%.1f", r.Throughput)
		}
		status := r.Detail
		if i := strings.Index(status, " ("); i > 0 {
			status = status[:i]
		}
		t.Rows = append(t.Rows, []string{r.Variant, us, tf, fmt.Sprintf("%.1f", float64(r.Workspace)/(1<<20)), status})
	}
	env.PrintTable(t)
	return nil
}

// legacyRows times every legacy algorithm of lc on the buffers b, then, if
// lc has one, the graph API's pick on them: the first candidate of its
// heuristics, timed by autotuning as the algorithms are timed.
func legacyRows(env *lessons.Env, l *lessons.Lesson, step string, lc legacyCase, b *conv.Buffers) ([]lessons.Result, error) {
	sh := conv.Of(benchShape)
	result := func(variant string, t float64, ws int64, detail string) lessons.Result {
		r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: variant, Size: conv.Label(benchShape),
			Dims: benchShape, DType: lc.dt.String(), MedianMs: t * 1e3, Workspace: ws, Detail: detail, Unit: "TFLOP/s"}
		if t > 0 {
			r.Throughput = conv.FLOPs(benchShape) / t / 1e12
		}
		return env.Record(r)
	}
	cv := cudnnx.LegacyConv{N: sh.N, C: sh.C, H: sh.H, W: sh.W, K: sh.K, R: 3, S: 3, Pad: 1, Stride: 1, Type: lc.dt, TF32: lc.tf32, NHWC: lc.nhwc,
		X: b.X, Wt: b.W, Y: b.Y}
	algos, err := cudnnx.ConvAlgorithms(env.Dev, cv)
	if err != nil {
		return nil, err
	}
	var out []lessons.Result
	for _, a := range algos {
		out = append(out, result(lc.name(a.Name), a.Time.Seconds(), a.Workspace, a.Status))
	}
	name := lc.graphOf()
	if name == "" {
		return out, nil
	}
	g, x, w, _, y := conv.Graph(name, sh, lc.dt, lc.nhwc, false)
	rep, err := g.Plan(env.Dev, b.Bind(x, w, nil, y), cudnnx.Options{Autotune: true, NoCache: true})
	if err != nil {
		return nil, err
	}
	first, ok := firstTimed(rep)
	if !ok {
		return nil, fmt.Errorf("%s: no candidate of the heuristics ran", name)
	}
	return append(out, result(lc.name("graph API, the heuristics' pick"), first.Time.Seconds(), first.Workspace,
		fmt.Sprintf("ok, engine %d", first.Engine))), nil
}

// firstTimed is the first candidate of an autotuned plan that ran: the
// plan the graph runs without autotuning, which takes the heuristics'
// first configuration that finalizes.
func firstTimed(rep cudnnx.PlanReport) (cudnnx.Candidate, bool) {
	for _, c := range rep.Candidates {
		if c.Err == "" && c.Time > 0 {
			return c, true
		}
	}
	return cudnnx.Candidate{}, false
}
