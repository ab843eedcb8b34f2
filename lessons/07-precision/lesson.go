// Package precision is lesson 7: one matrix product in FP32, TF32, FP16,
// BF16 and FP8, its throughput, its error and where that error comes from;
// the range of each format; and the sum inside every product, kept in fp16
// or in fp32, as the exercise.
package precision

import (
	"cmp"
	"embed"
	"fmt"
	"math"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// format is one precision: how its operands are stored and multiplied.
type format struct {
	name    string
	in, out gpu.DType
	compute blas.Compute
	tol     float64
	bits    string // sign/exponent/mantissa
	peak    string // the GPU's peak that bounds it
	transB  bool   // B uploaded transposed (N×K): cuBLASLt's "TN" layout, which FP8 requires
}

// formats are the five precisions, in the order every table lists them.
// FP8 alone is uploaded with B transposed and writes BF16: cuBLASLt takes
// FP8 only in its TN layout, and the blas package's FP8 product writes
// BF16.
var formats = []format{
	{"fp32", gpu.FP32, gpu.FP32, blas.Compute32F, 1e-5, "1/8/23", gpu.PeakFP32, false},
	{"tf32", gpu.FP32, gpu.FP32, blas.Compute32FFastTF32, 1e-2, "1/8/10", gpu.PeakTF32, false},
	{"fp16", gpu.FP16, gpu.FP16, blas.Compute32F, 1e-2, "1/5/10", gpu.PeakFP16, false},
	{"bf16", gpu.BF16, gpu.BF16, blas.Compute32F, 1e-2, "1/8/7", gpu.PeakBF16, false},
	{fp8, gpu.FP8E4M3, gpu.BF16, blas.Compute32F, 1e-1, "1/4/3", gpu.PeakFP8, true},
}

// fp16TN is FP16 uploaded as FP8 is, with B transposed: the one change
// between fp16 and it is the layout, a control for FP8's speed.
var fp16TN = format{"fp16 tn", gpu.FP16, gpu.FP16, blas.Compute32F, 1e-2, "1/5/10", gpu.PeakFP16, true}

// The names that steps list.
const (
	fp8  = "fp8 e4m3"
	fp16 = "fp16"
)

// allFormats are the five precisions and the control: every impl of the
// product.
func allFormats() []format { return append(formats[:len(formats):len(formats)], fp16TN) }

// formatNames are the five precisions' names, what the Check and
// Throughput steps run: the control fp16TN runs in a step of its own.
func formatNames() []string {
	var out []string
	for _, f := range formats {
		out = append(out, f.name)
	}
	return out
}

func formatOf(name string) (format, error) {
	for _, f := range allFormats() {
		if f.name == name {
			return f, nil
		}
	}
	return format{}, fmt.Errorf("precision has no variant %q", name)
}

func init() {
	five := formatNames()
	check := &lessons.CheckStep{Impls: five}
	throughput := &lessons.Sweep{Title: "GEMM throughput by precision", XLabel: "matrix size (square, one side)", Impls: five,
		Sizes: []lessons.Size{{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}}}
	// layout times fp16 as FP8 takes its operands, beside both, in
	// rounds: the ratios to fp16 are medians of paired rounds.
	layout := &lessons.Sweep{Title: "FP16 with B transposed, as FP8 takes it", XLabel: "matrix size (square, one side)",
		Impls: []string{fp16, fp16TN.name, fp8}, Rounds: 3,
		Sizes: []lessons.Size{{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}}}
	dot := dotProblem()
	lessons.Register(lessons.Def{
		Number: 7, Slug: "precision", Files: files, Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "dot_exercise.cu", Kernel: "dot_exercise", Like: "dot_h_v1", Bench: dotBench,
			Task: "Fill in each thread's share of the row's dot product, the products of its columns added into partial, " +
				"so that the row's sum, rounded to fp16 once at the end, is as close as fp32 arithmetic gets it, at rows of 2²⁰ too.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "racecheck"},
			{File: "half_accumulator.cu", Want: "check: out["},
			{File: "half_product.cu", Want: "check: out[2] = 0, want"},
			{File: "bits_as_numbers.cu", Want: "not finite"},
		},
		Actions: map[string]lessons.Action{
			"Five precisions":            &lessons.Run{F: memoryTable},
			"Range":                      &lessons.Run{F: rangeTables},
			"Check":                      check,
			"Throughput":                 throughput,
			"FP8's layout":               &lessons.Run{Name: "measure", F: layoutStep(layout)},
			"Where the error comes from": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error { return errorSources(env, l, check) }},
			"Cost and benefit": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error {
				return tradeoff(env, l, throughput, check)
			}},
			"The clock under load":  &lessons.Run{Name: "measure", F: sustained},
			"A dot product in FP16": &lessons.ShowKernel{Names: []string{"sum256", "dot_h_v1", "dot_h_acc16"}, File: "precision.cu"},
			"Summing in FP16":       &lessons.Run{Name: "measure", F: summing(dot), Replay: summingReplay},
			"The sums, checked":     &lessons.CheckStep{Problem: dot, Impls: []string{"dot_h_v1"}},
			"Exercise":              &lessons.ExerciseStep{},
		},
	})
}

func problem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "GEMM by precision", DType: "fp32…fp8", Unit: "TFLOP/s",
		CheckSizes: []lessons.Size{{48, 32, 64}, {1000, 1003, 517}, {1024, 1008, 528}},
		Setup:      setup,
		Memory:     memory,
		Work:       lessons.MatmulFLOPs,
	}
	for _, f := range allFormats() {
		lib, layout := "cuBLAS", "B as K×N"
		if f.in == gpu.FP8E4M3 {
			lib = "cuBLASLt"
		}
		if f.transB {
			layout = "B uploaded transposed (N×K)"
		}
		im := lessons.Impl{Name: f.name, Summary: fmt.Sprintf("%s, %s, %s, writes %s", f.bits, lib, layout, f.out), Library: true, Peak: f.peak}
		if f.in == gpu.FP8E4M3 {
			im.Requires = func(s lessons.Size) error {
				if s[0]%16 != 0 || s[1]%16 != 0 || s[2]%16 != 0 {
					return fmt.Errorf("FP8 needs M, N and K multiples of 16, got %s", s)
				}
				return nil
			}
		}
		p.Impls = append(p.Impls, im)
	}
	return p
}

// pcase holds the FP32 inputs and, once an impl asks, their encodings.
type pcase struct {
	env     *lessons.Env
	m, n, k int
	a, b    []float32 // A (M×K) and B (K×N), the unrounded inputs
	a64     []float64 // the same as float64, for the reference
	b64     []float64
	sample  []int
	dev     map[string][2]gpu.DevicePtr // by input type and layout of B: A and B as uploaded
	dc      gpu.DevicePtr
	last    format
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	c := &pcase{env: env, m: s[0], n: s[1], k: s[2], dev: map[string][2]gpu.DevicePtr{}}
	c.a, c.a64 = numeric.RandomMatrix(c.m * c.k)
	c.b, c.b64 = numeric.RandomMatrix(c.k * c.n)
	c.sample = numeric.MatmulSample(c.m, c.n, c.k)
	var err error
	if c.dc, err = env.Dev.Alloc(int64(4 * c.m * c.n)); err != nil {
		return nil, err
	}
	return c, nil
}

// upload puts A and B on the GPU in type t, once for each layout of B:
// transposed where transB is set, as FP8 wants it.
func (c *pcase) upload(t gpu.DType, transB bool) ([2]gpu.DevicePtr, error) {
	key := t.String()
	if transB {
		key += " tn"
	}
	if p, ok := c.dev[key]; ok {
		return p, nil
	}
	var p [2]gpu.DevicePtr
	b := c.b
	if transB {
		b = make([]float32, len(c.b))
		for i := 0; i < c.k; i++ {
			for j := 0; j < c.n; j++ {
				b[j*c.k+i] = c.b[i*c.n+j]
			}
		}
	}
	for i, v := range [][]float32{c.a, b} {
		var err error
		switch t {
		case gpu.FP32:
			p[i], err = gpu.Upload(c.env.Dev, v)
		case gpu.FP16, gpu.BF16:
			h := make([]uint16, len(v))
			for j, x := range v {
				if t == gpu.FP16 {
					h[j] = gpu.Float16Bits(x)
				} else {
					h[j] = gpu.BFloat16Bits(x)
				}
			}
			p[i], err = gpu.Upload(c.env.Dev, h)
		case gpu.FP8E4M3:
			q := make([]uint8, len(v))
			for j, x := range v {
				q[j] = gpu.Float8E4M3Bits(x)
			}
			p[i], err = gpu.Upload(c.env.Dev, q)
		}
		if err != nil {
			return p, err
		}
	}
	c.dev[key] = p
	return p, nil
}

func (c *pcase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
	f, err := formatOf(impl.Name)
	if err != nil {
		return nil, err
	}
	ab, err := c.upload(f.in, f.transB)
	if err != nil {
		return nil, err
	}
	c.last = f
	return []gpu.Op{blas.GEMM{M: c.m, N: c.n, K: c.k, A: ab[0], B: ab[1], C: c.dc, Alpha: 1,
		Type: f.in, OutType: f.out, Compute: f.compute, TransB: f.transB}}, nil
}

// Poison fills C with NaN in the output's own format.
func (c *pcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dc, Value: lessons.PoisonWord(c.last.out), Count: int64(c.m * c.n)})
}

// Check compares C with the float64 product of the unrounded inputs, as a
// whole: the error the precision costs.
func (c *pcase) Check() (numeric.CheckStats, error) {
	got := make([]float32, c.m*c.n)
	switch c.last.out {
	case gpu.FP32:
		v, err := gpu.Download[float32](c.env.Dev, c.dc, c.m*c.n)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		got = v
	default:
		h, err := gpu.Download[uint16](c.env.Dev, c.dc, c.m*c.n)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		for i, x := range h {
			if c.last.out == gpu.FP16 {
				got[i] = gpu.Float16From(x)
			} else {
				got[i] = gpu.BFloat16From(x)
			}
		}
	}
	return numeric.MatmulCheck(got, c.a64, c.b64, c.m, c.n, c.k, c.sample, c.last.tol, true)
}

// memory is C in fp32 and A and B in every encoding that the impls ask
// for (fp32, fp16, fp16 with B transposed, bf16, fp8) on the device; on
// the host, A and B in fp32 and float64, one encoding at a time, and C
// read back.
func memory(s lessons.Size) lessons.Memory {
	ab, c := int64(s[0]*s[2]+s[2]*s[1]), int64(s[0]*s[1])
	return lessons.Memory{Device: 4*c + (4+2+2+2+1)*ab, Host: 12*ab + 2*4*ab + 8*c}
}

func (c *pcase) Free() {
	for _, p := range c.dev {
		c.env.Dev.Free(p[0])
		c.env.Dev.Free(p[1])
	}
	c.env.Dev.Free(c.dc)
}

// memoryTable prints what one 4096×4096 operand takes in each format.
func memoryTable(env *lessons.Env, l *lessons.Lesson, step string) error {
	t := &lessons.Table{Headers: []string{"precision", "bits (sign/exp/mantissa)", "bytes per element", "4096² operand (MiB)", "largest value"},
		Right: []bool{false, false, true, true, true},
		Notes: []string{"tf32 is a format of the tensor cores only: its operands are stored, and read, as fp32."}}
	for _, f := range formats {
		t.Rows = append(t.Rows, []string{f.name, f.bits, fmt.Sprint(f.in.Size()),
			fmt.Sprintf("%.0f", float64(4096*4096*f.in.Size())/(1<<20)), fmt.Sprintf("%.5g", limitsOf(f.name).largest)})
	}
	env.PrintTable(t)
	return nil
}

// tradeoff sets throughput at 4096³ (from the sweep) beside error (from
// the check), this session's results or the recorded ones.
func tradeoff(env *lessons.Env, l *lessons.Lesson, sweep *lessons.Sweep, check *lessons.CheckStep) error {
	bench, checks := env.Latest(l, sweep), env.Latest(l, check)
	rate, errs := map[string]lessons.Result{}, map[string]float64{}
	for _, r := range bench {
		if r.Dims[0] == 4096 {
			rate[r.Variant] = r
		}
	}
	for _, r := range checks {
		if r.Passed && r.MaxRelErr > errs[r.Variant] {
			errs[r.Variant] = r.MaxRelErr
		}
	}
	if len(rate) == 0 {
		fmt.Fprintln(env.Out, "Nothing measured yet: run 'bench' first.")
		return nil
	}
	t := &lessons.Table{Headers: []string{"precision", "TFLOP/s at 4096³", "× fp32", "‖out − ref‖/‖ref‖", "correct digits"},
		Right: []bool{false, true, true, true, true}, Notes: []string{env.About(bench)}}
	for _, f := range formats {
		r, e := rate[f.name], errs[f.name]
		digits := "—"
		if e > 0 {
			digits = fmt.Sprintf("%.1f", -math.Log10(e))
		}
		t.Rows = append(t.Rows, []string{f.name, fmt.Sprintf("%.1f", r.Throughput), lessons.RatioOf(r, rate["fp32"]).Text("%.1f"), fmt.Sprintf("%.1e", e), digits})
	}
	env.PrintTable(t)
	return nil
}

// layoutStep measures sw (fp16, fp16 with B transposed as FP8 takes it,
// and fp8) and checks each of its impls once at modelSize, then shows
// each one's rate as a share of fp16's at each size, the median of the
// rounds' ratios with their range, beside its error: on a GPU what it
// measures, without one what was recorded.
func layoutStep(sw *lessons.Sweep) func(env *lessons.Env, l *lessons.Lesson, step string) error {
	return func(env *lessons.Env, l *lessons.Lesson, step string) error {
		if err := sw.Do(env, l, step); err != nil {
			return err
		}
		checks, err := env.LiveOr(func() ([]lessons.Result, error) { return checkAt(env, l, step, sw.Impls, modelSize) },
			func() ([]lessons.Result, error) { return l.Recorded().Filter(step, "check"), nil })
		if err != nil {
			return err
		}
		rs := env.Results.Filter(step, "bench")
		if len(rs) == 0 {
			rs = l.Recorded().Filter(step, "bench")
		}
		if t := layoutTable(rs, checks); t != nil {
			env.PrintTable(t)
		}
		return nil
	}
}

// layoutTable sets each timed point's rate beside fp16's at its size, and
// each variant's error at modelSize from checks; nil where fp16 was not
// timed.
func layoutTable(rs, checks []lessons.Result) *lessons.Table {
	base := map[string]lessons.Result{}
	for _, r := range rs {
		if r.Variant == fp16 {
			base[r.Size] = r
		}
	}
	if len(base) == 0 {
		return nil
	}
	errs := map[string]string{}
	for _, r := range checks {
		errs[r.Variant] = fmt.Sprintf("%.2e", r.MaxRelErr)
	}
	t := &lessons.Table{Headers: []string{"variant", "size", "TFLOP/s", "× fp16 (median of rounds, range)", "‖out − ref‖/‖ref‖ at " + modelSize.String()},
		Right: []bool{false, false, true, true, true}, Notes: []string{lessons.ResultSet{Results: append(rs[:len(rs):len(rs)], checks...)}.Source()}}
	for _, r := range rs {
		if r.Throughput == 0 {
			continue
		}
		ratio := "1"
		if r.Variant != fp16 {
			ratio = lessons.RatioOf(r, base[r.Size]).Text("%.2f")
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.Size, fmt.Sprintf("%.1f", r.Throughput), ratio, cmp.Or(errs[r.Variant], "—")})
	}
	return t
}

// modelSize is the check size every format runs (FP8 needs multiples of
// 16), where the step "FP8's layout" checks its impls.
var modelSize = lessons.Size{1024, 1008, 528}

// checkAt runs each impl of the lesson's product named in names once at
// size s and records its error, the Check step's ‖out − ref‖/‖ref‖, as a
// check of step.
func checkAt(env *lessons.Env, l *lessons.Lesson, step string, names []string, s lessons.Size) ([]lessons.Result, error) {
	var out []lessons.Result
	for _, name := range names {
		f, err := formatOf(name)
		if err != nil {
			return out, err
		}
		c, err := env.RunOnce(l.Problem, s, lessons.Impl{Name: name, Library: true}, gpu.Kernel{}, 0)
		if err != nil {
			return out, err
		}
		st, err := c.Check()
		c.Free()
		r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: name, Size: s.String(), Dims: s, DType: l.Problem.DType,
			MaxRelErr: st.MaxRelErr, Tolerance: f.tol, Passed: err == nil}
		if err != nil {
			r.Detail = err.Error()
		}
		out = append(out, env.Record(r))
	}
	return out, nil
}
