// Package cudnnconv is lesson 10: one convolution through cuDNN's legacy
// algorithms and through its graph API, in NCHW and NHWC, fp32 and fp16.
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

//go:embed lesson.md results
var files embed.FS

// benchShape is the convolution the lesson measures: a ResNet-style 3×3
// layer on 112×112 feature maps.
var benchShape = lessons.Size{32, 64, 112, 112, 64}

func init() {
	var sweep []lessons.Size
	for _, n := range []int{1, 4, 8, 16, 32} {
		sweep = append(sweep, lessons.Size{n, 64, 112, 112, 64})
	}
	lessons.Register(lessons.Def{
		Number: 10, Slug: "cudnn-conv", Files: files, Problem: problem(),
		Actions: map[string]lessons.Action{
			"A convolution as a graph": &lessons.Run{Name: "show", F: showGraph},
			"Check":                    &lessons.CheckStep{},
			"Legacy algorithms":        &lessons.Run{Name: "measure", F: algorithms},
			"Layouts and precision": &lessons.Sweep{Title: "cuDNN 3×3 convolution", XLabel: "batch (N), 64×112×112 → 64",
				Sizes: sweep},
		},
	})
}

// variant is one way to store and compute the convolution.
type variant struct {
	dt   gpu.DType
	nhwc bool
}

var variants = map[string]variant{
	"graph NHWC fp16": {gpu.FP16, true},
	"graph NCHW fp16": {gpu.FP16, false},
	"graph NHWC fp32": {gpu.FP32, true},
	"graph NCHW fp32": {gpu.FP32, false},
}

func problem() *lessons.Problem {
	return &lessons.Problem{
		Name: "3×3 convolution (cuDNN)", DType: "float16 / float32", Unit: "TFLOP/s",
		CheckSizes: []lessons.Size{{2, 8, 10, 10, 16}, {3, 16, 13, 7, 24}},
		// cuDNN computes fp32 convolutions on TF32 tensor cores where it
		// may, so TF32's peak bounds them, not FP32's.
		// A case keeps every variant's buffers, but a run touches only
		// its own: that decides whether the L2 is flushed between runs.
		Impls: []lessons.Impl{
			{Name: "graph NHWC fp16", Summary: "channels innermost, fp16 data, fp32 accumulation: tensor cores", Library: true, Peak: gpu.PeakFP16, Footprint: conv.Footprint(2)},
			{Name: "graph NCHW fp16", Summary: "the same numbers with W innermost", Library: true, Peak: gpu.PeakFP16, Footprint: conv.Footprint(2)},
			{Name: "graph NHWC fp32", Summary: "fp32 data, channels innermost", Library: true, Peak: gpu.PeakTF32, Footprint: conv.Footprint(4)},
			{Name: "graph NCHW fp32", Summary: "fp32 data, W innermost", Library: true, Peak: gpu.PeakTF32, Footprint: conv.Footprint(4)},
		},
		Setup:     setup,
		Memory:    memory,
		Work:      conv.FLOPs,
		SizeLabel: conv.Label,
	}
}

// ccase holds the inputs in both types, uploaded per layout as impls ask.
type ccase struct {
	env  *lessons.Env
	s    conv.Shape
	data map[gpu.DType]*conv.Data
	bufs map[variant]*conv.Buffers
	last variant
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	sh := conv.Of(s)
	return &ccase{env: env, s: sh, bufs: map[variant]*conv.Buffers{},
		data: map[gpu.DType]*conv.Data{gpu.FP16: conv.NewData(sh, gpu.FP16), gpu.FP32: conv.NewData(sh, gpu.FP32)}}, nil
}

func (c *ccase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
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
	c.last = v
	g, x, w, _, y := conv.Graph(impl.Name, c.s, v.dt, v.nhwc, false)
	op, err := g.Op(b.Bind(x, w, nil, y), cudnnx.Options{})
	if err != nil {
		return nil, err
	}
	return []gpu.Op{op}, nil
}

func (c *ccase) Poison() error { return c.bufs[c.last].Poison(c.env.Dev) }

// Check compares the last variant's output with the float64 convolution.
// fp32 is held to the fp16 bound too: cuDNN may compute fp32 convolutions
// with TF32 tensor cores, which keep 10 bits of mantissa.
func (c *ccase) Check() (numeric.CheckStats, error) {
	got, err := c.bufs[c.last].Output(c.env.Dev)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	return c.data[c.last.dt].Check(got, false, numeric.TolHalf)
}

// memory is the buffers of every variant, kept once uploaded: fp16 and
// fp32, each in two layouts. On the host, each type keeps its own float64 inputs.
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

// legacyCases are the convolutions the algorithm table measures.
var legacyCases = []variant{{gpu.FP32, false}, {gpu.FP16, true}}

func legacyName(v variant, algo string) string {
	layout := "NCHW"
	if v.nhwc {
		layout = "NHWC"
	}
	return fmt.Sprintf("%s %s: %s", layout, v.dt, algo)
}

// algorithms times every legacy algorithm on the measured convolution in
// NCHW fp32 and NHWC fp16, live, or shows the recorded table.
func algorithms(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		var rs []lessons.Result
		sh := conv.Of(benchShape)
		for _, v := range legacyCases {
			b, err := conv.NewData(sh, v.dt).Upload(env.Dev, v.dt, v.nhwc)
			if err != nil {
				return nil, err
			}
			cv := cudnnx.LegacyConv{N: sh.N, C: sh.C, H: sh.H, W: sh.W, K: sh.K, R: 3, S: 3, Pad: 1, Stride: 1, Type: v.dt, NHWC: v.nhwc, X: b.X, Wt: b.W, Y: b.Y}
			algos, err := cudnnx.ConvAlgorithms(env.Dev, cv)
			b.Free(env.Dev)
			if err != nil {
				return nil, err
			}
			for _, a := range algos {
				r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: legacyName(v, a.Name), Size: conv.Label(benchShape),
					Dims: benchShape, DType: v.dt.String(), MedianMs: a.Time.Seconds() * 1e3, Workspace: a.Workspace, Detail: a.Status, Unit: "TFLOP/s"}
				if a.Time > 0 {
					r.Throughput = conv.FLOPs(benchShape) / a.Time.Seconds() / 1e12
				}
				rs = append(rs, env.Record(r))
			}
		}
		return rs, nil
	})
	if !ok {
		return err
	}
	t := &lessons.Table{
		Headers: []string{"layout, type: algorithm", "time (ms)", "TFLOP/s", "workspace (MiB)", "status"},
		Right:   []bool{false, true, true, true, false},
		Notes:   []string{conv.Label(benchShape) + ", 3×3, padding 1 · " + lessons.ResultSet{Results: rs}.Source()},
	}
	for _, r := range rs {
		ms, tf := "—", "—"
		if r.MedianMs > 0 {
			ms, tf = fmt.Sprintf("%.3f", r.MedianMs), fmt.Sprintf("%.1f", r.Throughput)
		}
		status := r.Detail
		if i := strings.Index(status, " ("); i > 0 {
			status = status[:i]
		}
		t.Rows = append(t.Rows, []string{r.Variant, ms, tf, fmt.Sprintf("%.1f", float64(r.Workspace)/(1<<20)), status})
	}
	env.PrintTable(t)
	return nil
}
