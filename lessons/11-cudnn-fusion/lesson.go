// Package cudnnfusion is lesson 11: convolution, bias and ReLU as one fused
// cuDNN graph against three kernels that each go through global memory,
// what building a plan costs, what autotuning buys, and, as the exercise,
// the bias and ReLU written as one elementwise kernel.
package cudnnfusion

import (
	"embed"
	"fmt"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/conv"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// benchShape is the layer the lesson measures, fp16 NHWC.
var benchShape = lessons.Size{32, 64, 112, 112, 64}

// exerciseMin is the share of the layer's throughput with the course's
// bias_relu_nhwc that the layer must reach with the exercise's kernel, at
// benchShape. Checked on the H200, testdata's one_at_a_time.cu (one value
// a thread at a time) reached 0.64 (144.5 µs against 92.8), and
// solution.cu (8 values a thread, as bias_relu_nhwc) 1.01 (93.0 against
// 93.6).
const exerciseMin = 0.85

// batches are the batch sizes the sweep runs the layer at.
var batches = []int{1, 4, 8, 16, 32}

// The ways to run the layer, as impls.
const (
	convAlone  = "conv alone"
	unfused    = "unfused: conv, bias, ReLU"
	unfusedOne = "unfused: conv, bias+ReLU"
	fused      = "fused graph"
	autotuned  = "fused graph, autotuned"
)

func init() {
	var sweep []lessons.Size
	for _, n := range batches {
		sweep = append(sweep, batch(n))
	}
	fusedOrNot := &lessons.Sweep{Title: "conv + bias + ReLU, fp16 NHWC", XLabel: "batch (N), 64×112×112 → 64", Sizes: sweep}
	lessons.Register(lessons.Def{
		Number: 11, Slug: "cudnn-fusion", Files: files, Kernels: "bias_relu.cu", Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "bias_relu_exercise.cu", Kernel: "bias_relu_exercise", Like: unfusedOne, Bench: benchShape,
			Fast: &lessons.Speed{Against: unfusedOne, Min: exerciseMin,
				Why: "the course's kernel moves 8 values, 16 bytes, with each load and each store; " +
					"one 2-byte value a thread at a time takes eight times the memory instructions for the same bytes"},
			Task: fmt.Sprintf("Write the bias and the ReLU that follow the convolution as one pass over y, in place: "+
				"each fp16 element of the NHWC output becomes ReLU(y + b) with the bias of its channel, "+
				"over a grid of fewer threads than elements. At %s the layer with your kernel must reach "+
				"at least %.2f of its throughput with the course's.", conv.Label(benchShape), exerciseMin),
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "one_at_a_time.cu", Want: "correct but too slow"},
			{File: "nchw_channel.cu", Want: "check: y: relative error"},
			{File: "relu_before_bias.cu", Want: "check: y: relative error"},
			{File: "bits_added.cu", Want: "check: y: relative error"},
		},
		Actions: map[string]lessons.Action{
			"Three kernels or one":  &lessons.ShowKernel{Names: []string{"bias_add_nhwc", "relu_h", "bias_relu_nhwc"}},
			"The fused graph":       &lessons.Run{Name: "show", F: showGraph},
			"Check":                 &lessons.CheckStep{},
			"Fused against unfused": fusedOrNot,
			"Bytes and time": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error {
				return bytesTable(env, l, fusedOrNot)
			}},
			"Rebuild or reuse": &lessons.Run{Name: "measure", F: rebuild},
			"Autotuning":       &lessons.Run{Name: "measure", F: autotune},
			"Exercise":         &lessons.ExerciseStep{},
		},
	})
}

func problem() *lessons.Problem {
	return &lessons.Problem{
		Name: "conv + bias + ReLU (cuDNN, fp16 NHWC)", DType: "float16", Unit: "TFLOP/s", Peak: gpu.PeakFP16, Baseline: convAlone,
		Kernels:    "bias_relu.cu",
		CheckSizes: []lessons.Size{{2, 8, 10, 10, 16}, {3, 16, 13, 7, 24}},
		Impls: []lessons.Impl{
			{Name: convAlone, Summary: "the convolution only, for reference: the floor for the whole layer", Library: true},
			{Name: unfused, Summary: "a conv graph, then bias_add_nhwc, then relu_h: y crosses memory five times", Library: true,
				Kernels: []string{"bias_add_nhwc", "relu_h"}},
			{Name: unfusedOne, Summary: "a conv graph, then bias_relu_nhwc, one elementwise kernel: y crosses memory three times", Library: true,
				Kernels: []string{"bias_relu_nhwc"}},
			{Name: fused, Summary: "one graph, bias and ReLU applied in the convolution's epilogue (heuristics' first plan)", Library: true},
			{Name: autotuned, Summary: "the same graph, every candidate plan timed and the fastest kept", Library: true},
		},
		Setup:     setup,
		Memory:    conv.Memory(2, 1),
		Work:      conv.FLOPs,
		SizeLabel: conv.Label,
	}
}

// fcase is one layer's data on the GPU, fp16 NHWC.
type fcase struct {
	env       *lessons.Env
	s         conv.Shape
	data      *conv.Data
	buf       *conv.Buffers
	bias, act gpu.Kernel
	biasAct   gpu.Kernel // bias and ReLU in one pass
	last      string
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	sh := conv.Of(s)
	if sh.K%8 != 0 {
		return nil, fmt.Errorf("%s: the bias kernel reads 8 channels at a time, so K must be a multiple of 8", conv.Label(s))
	}
	c := &fcase{env: env, s: sh, data: conv.NewData(sh, gpu.FP16)}
	var err error
	if c.bias, err = env.FileKernel("bias_relu.cu", "bias_add_nhwc"); err != nil {
		return nil, err
	}
	if c.act, err = env.FileKernel("bias_relu.cu", "relu_h"); err != nil {
		return nil, err
	}
	if c.biasAct, err = env.FileKernel("bias_relu.cu", "bias_relu_nhwc"); err != nil {
		return nil, err
	}
	if c.buf, err = c.data.Upload(env.Dev, gpu.FP16, true); err != nil {
		return nil, err
	}
	return c, nil
}

// Ops is impl's work: a graph, then for the unfused ways their
// elementwise kernels, each loaded through Env.FileKernel (so a learner's
// edit of one runs in its place). k, where set, is a learner's kernel
// judged like the one-kernel way: it runs in place of bias_relu_nhwc,
// launched as it is.
func (c *fcase) Ops(impl lessons.Impl, k gpu.Kernel, _ int) ([]gpu.Op, error) {
	c.last = impl.Name
	biasRelu := impl.Name == fused || impl.Name == autotuned
	g, x, w, b, y := conv.Graph(impl.Name, c.s, gpu.FP16, true, biasRelu)
	op, err := g.Op(c.buf.Bind(x, w, b, y), cudnnx.Options{Autotune: impl.Name == autotuned})
	if err != nil {
		return nil, err
	}
	switch impl.Name {
	case convAlone, fused, autotuned:
		return []gpu.Op{op}, nil
	}
	n := int64(c.s.N * c.s.K * c.s.H * c.s.W)
	// Two full waves of blocks, each thread striding over 8 channels at a
	// time.
	grid := gpu.Dim(min(gpu.Blocks(int(n/8), 256), c.env.Dev.Info().TwoWaves(256)))
	biasArgs := []gpu.Arg{gpu.Ptr(c.buf.Y), gpu.Ptr(c.buf.Bias), gpu.Int64(n), gpu.Int32(int32(c.s.K))}
	switch impl.Name {
	case unfused:
		return []gpu.Op{op,
			gpu.Launch{Kernel: c.bias, Grid: grid, Block: gpu.Dim(256), Args: biasArgs},
			gpu.Launch{Kernel: c.act, Grid: grid, Block: gpu.Dim(256), Args: []gpu.Arg{gpu.Ptr(c.buf.Y), gpu.Int64(n)}},
		}, nil
	case unfusedOne:
		biasAct := c.biasAct
		if k.Name != "" {
			biasAct = k
		}
		return []gpu.Op{op, gpu.Launch{Kernel: biasAct, Grid: grid, Block: gpu.Dim(256), Args: biasArgs}}, nil
	}
	return nil, fmt.Errorf("conv + bias + ReLU has no variant %q", impl.Name)
}

func (c *fcase) Poison() error { return c.buf.Poison(c.env.Dev) }

// Check compares the output with the float64 layer (the convolution alone
// for "conv alone").
func (c *fcase) Check() (numeric.CheckStats, error) {
	got, err := c.buf.Output(c.env.Dev)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	return c.data.Check(got, c.last != convAlone, numeric.TolHalf)
}

func (c *fcase) Free() { c.buf.Free(c.env.Dev) }

func showGraph(env *lessons.Env, l *lessons.Lesson, step string) error {
	g, _, _, _, _ := conv.Graph("conv+bias+relu", conv.Of(benchShape), gpu.FP16, true, true)
	fmt.Fprintln(env.Out, g)
	return nil
}

// traffic is the global-memory traffic of each way, predicted: x, w and the
// bias read once, y written once; unfused, the bias and the ReLU kernels each
// read and write y again, or the one bias+ReLU kernel does once.
func traffic(s conv.Shape, impl string) int64 {
	x, w, y := int64(2*s.N*s.C*s.H*s.W), int64(2*s.K*s.C*9), int64(2*s.N*s.K*s.H*s.W)
	switch impl {
	case convAlone:
		return x + w + y
	case unfused:
		return x + w + y + 2*y + 2*y + int64(2*s.K)
	case unfusedOne:
		return x + w + y + 2*y + int64(2*s.K)
	}
	return x + w + y + int64(2*s.K)
}

// bytesTable puts each way's predicted traffic beside its time at N = 32,
// then, at every batch size, what the unfused ways' extra passes over y
// add to the conv alone: bytes, time and the rate they make. All from the
// results of the sweep.
func bytesTable(env *lessons.Env, l *lessons.Lesson, sweep *lessons.Sweep) error {
	rs := env.Latest(l, sweep)
	by := map[string]lessons.Result{}
	for _, r := range rs {
		by[r.Variant+"\x00"+r.Size] = r
	}
	at := func(impl string, n int) (lessons.Result, bool) {
		r, ok := by[impl+"\x00"+conv.Label(batch(n))]
		return r, ok
	}
	base, ok := at(unfused, benchShape[0])
	alone, ok2 := at(convAlone, benchShape[0])
	if !ok || !ok2 {
		fmt.Fprintln(env.Out, "No results at N = 32 yet: run the sweep ('bench') first.")
		return nil
	}
	t := &lessons.Table{
		Headers: []string{"way", "memory traffic (MB)", "time (ms)", "traffic ÷ time (GB/s)", "× faster than unfused", "× the conv alone"},
		Right:   []bool{false, true, true, true, true, true},
		Notes:   []string{conv.Label(benchShape) + ", fp16 NHWC; traffic predicted from the tensors' sizes · " + env.About(rs)},
	}
	for _, im := range l.Problem.Impls {
		r, ok := at(im.Name, benchShape[0])
		if !ok {
			continue
		}
		// Every way does the same work, so a ratio of times is one of
		// throughputs, taken the other way round: r's time over the conv
		// alone's is the conv alone's throughput over r's.
		bytes := float64(traffic(conv.Of(benchShape), im.Name))
		t.Rows = append(t.Rows, []string{im.Name, fmt.Sprintf("%.0f", bytes/1e6), fmt.Sprintf("%.4f", r.MedianMs),
			fmt.Sprintf("%.0f", bytes/(r.MedianMs*1e-3)/1e9), lessons.RatioOf(r, base).String(), lessons.RatioOf(alone, r).String()})
	}
	env.PrintTable(t)

	passes := &lessons.Table{
		Headers: []string{"batch (N)", "way", "y (MB)", "extra traffic (MB)", "extra time (µs)", "extra traffic ÷ time (GB/s)"},
		Right:   []bool{true, false, true, true, true, true},
		Notes: []string{"what each unfused way adds to the conv alone: its passes over y (and the bias), predicted; " +
			"its median time less the conv alone's at the same size · " + env.About(rs)},
	}
	for _, n := range batches {
		alone, ok := at(convAlone, n)
		if !ok {
			continue
		}
		s := conv.Of(batch(n))
		for _, way := range []string{unfused, unfusedOne} {
			r, ok := at(way, n)
			if !ok {
				continue
			}
			extra := float64(traffic(s, way) - traffic(s, convAlone))
			dt := (r.MedianMs - alone.MedianMs) * 1e-3
			rate := "—"
			if dt > 0 {
				rate = fmt.Sprintf("%.0f", extra/dt/1e9)
			}
			passes.Rows = append(passes.Rows, []string{fmt.Sprint(n), way, fmt.Sprintf("%.1f", float64(2*s.N*s.K*s.H*s.W)/1e6),
				fmt.Sprintf("%.1f", extra/1e6), fmt.Sprintf("%.1f", dt*1e6), rate})
		}
	}
	env.PrintTable(passes)
	return nil
}

// batch is the measured layer at batch size n.
func batch(n int) lessons.Size {
	return lessons.Size{n, benchShape[1], benchShape[2], benchShape[3], benchShape[4]}
}

// layer builds the measured layer's fused graph with buffers on the GPU.
func layer(env *lessons.Env) (*cudnnx.Graph, cudnnx.Bind, func(), error) {
	sh := conv.Of(benchShape)
	buf, err := conv.NewData(sh, gpu.FP16).Upload(env.Dev, gpu.FP16, true)
	if err != nil {
		return nil, nil, nil, err
	}
	g, x, w, b, y := conv.Graph("conv+bias+relu", sh, gpu.FP16, true, true)
	return g, buf.Bind(x, w, b, y), func() { buf.Free(env.Dev) }, nil
}

// autotune lists the candidate plans the heuristics offered for the layer,
// each timed, and which one each way of choosing picks.
func autotune(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		g, bind, free, err := layer(env)
		if err != nil {
			return nil, err
		}
		defer free()
		rep, err := g.Plan(env.Dev, bind, cudnnx.Options{Autotune: true, NoCache: true})
		if err != nil {
			return nil, err
		}
		var out []lessons.Result
		for i, c := range rep.Candidates {
			detail := ""
			switch {
			case i == rep.Chosen && i == 0:
				detail = "the heuristics' choice, and autotuning's"
			case i == rep.Chosen:
				detail = "chosen by autotuning"
			case i == 0:
				detail = "the heuristics' choice"
			}
			if c.Err != "" {
				detail = c.Err
			}
			out = append(out, env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: fmt.Sprintf("config %d: engine %d", i+1, c.Engine),
				Size: conv.Label(benchShape), Dims: benchShape, DType: "float16", MedianMs: c.Time.Seconds() * 1e3,
				Workspace: c.Workspace, Detail: detail}))
		}
		return out, nil
	})
	if !ok {
		return err
	}
	t := &lessons.Table{
		Headers: []string{"candidate (engines differ in their knobs too)", "time (ms)", "workspace (KiB)", ""},
		Right:   []bool{false, true, true, false},
		Notes:   []string{conv.Label(benchShape) + " conv+bias+ReLU, fp16 NHWC, in the heuristics' order · " + lessons.ResultSet{Results: rs}.Source()},
	}
	for _, r := range rs {
		ms := "—"
		if r.MedianMs > 0 {
			ms = fmt.Sprintf("%.4f", r.MedianMs)
		}
		t.Rows = append(t.Rows, []string{r.Variant, ms, fmt.Sprintf("%.0f", float64(r.Workspace)/1024), r.Detail})
	}
	env.PrintTable(t)
	return nil
}
