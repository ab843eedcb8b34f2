// Package cudnnfusion is lesson 11: convolution, bias and ReLU as one fused
// cuDNN graph against three kernels that each go through global memory.
package cudnnfusion

import (
	"embed"
	"fmt"
	"time"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/conv"
	"cudarepl/numeric"
)

//go:embed lesson.md results
var files embed.FS

// benchShape is the layer the lesson measures, fp16 NHWC.
var benchShape = lessons.Size{32, 64, 112, 112, 64}

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
	for _, n := range []int{1, 4, 8, 16, 32} {
		sweep = append(sweep, lessons.Size{n, 64, 112, 112, 64})
	}
	fusedOrNot := &lessons.Sweep{Title: "conv + bias + ReLU, fp16 NHWC", XLabel: "batch (N), 64×112×112 → 64", Sizes: sweep}
	lessons.Register(lessons.Def{
		Number: 11, Slug: "cudnn-fusion", Files: files, Kernels: "bias_relu.cu", Problem: problem(),
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

func (c *fcase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
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
		return []gpu.Op{op, gpu.Launch{Kernel: c.biasAct, Grid: grid, Block: gpu.Dim(256), Args: biasArgs}}, nil
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
// from the results of the sweep.
func bytesTable(env *lessons.Env, l *lessons.Lesson, sweep *lessons.Sweep) error {
	rs := env.Latest(l, sweep)
	by := map[string]lessons.Result{}
	for _, r := range rs {
		if r.Dims[0] == benchShape[0] {
			by[r.Variant] = r
		}
	}
	base, ok := by[unfused]
	alone, ok2 := by[convAlone]
	if !ok || !ok2 {
		fmt.Fprintln(env.Out, "No results at N = 32 yet: run the sweep ('bench') first.")
		return nil
	}
	t := &lessons.Table{
		Headers: []string{"way", "memory traffic (MB)", "time (ms)", "× faster than unfused", "× the conv alone"},
		Right:   []bool{false, true, true, true, true},
		Notes:   []string{conv.Label(benchShape) + ", fp16 NHWC; traffic predicted from the tensors' sizes · " + env.About(rs)},
	}
	for _, im := range l.Problem.Impls {
		r, ok := by[im.Name]
		if !ok {
			continue
		}
		// Every way does the same work, so a ratio of times is one of
		// throughputs, taken the other way round: r's time over the conv
		// alone's is the conv alone's throughput over r's.
		t.Rows = append(t.Rows, []string{im.Name, fmt.Sprintf("%.0f", float64(traffic(conv.Of(benchShape), im.Name))/1e6),
			fmt.Sprintf("%.4f", r.MedianMs), lessons.RatioOf(r, base).String(), lessons.RatioOf(alone, r).String()})
	}
	env.PrintTable(t)
	return nil
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

// rebuild times building the plan from nothing against finding it in the
// cache, host wall time per call.
func rebuild(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		g, bind, free, err := layer(env)
		if err != nil {
			return nil, err
		}
		defer free()
		var out []lessons.Result
		for _, way := range []struct {
			name string
			opt  cudnnx.Options
			reps int
		}{{"rebuild: heuristics, configs, finalize", cudnnx.Options{NoCache: true}, 5}, {"reuse: cache lookup", cudnnx.Options{}, 20}} {
			var ts []time.Duration
			for range way.reps {
				start := time.Now()
				if _, err := g.Plan(env.Dev, bind, way.opt); err != nil {
					return nil, err
				}
				ts = append(ts, time.Since(start))
			}
			out = append(out, env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: way.name, Size: conv.Label(benchShape),
				Dims: benchShape, DType: "float16"}.WithTimes(gpu.Summarize(ts))))
		}
		return out, nil
	})
	if !ok {
		return err
	}
	t := &lessons.Table{
		Headers: []string{"plan for the fused layer", "host time (ms)", "min (ms)", "max (ms)", "calls"},
		Right:   []bool{false, true, true, true, true},
		Notes:   []string{"each call from this process to the GPU's, including the round trip · " + lessons.ResultSet{Results: rs}.Source()},
	}
	for _, r := range rs {
		t.Rows = append(t.Rows, []string{r.Variant, fmt.Sprintf("%.3f", r.MedianMs), fmt.Sprintf("%.3f", r.MinMs), fmt.Sprintf("%.3f", r.MaxMs), fmt.Sprint(r.Reps)})
	}
	env.PrintTable(t)
	return nil
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
