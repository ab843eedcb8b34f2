// Package precision is lesson 7: one matrix product in FP32, TF32, FP16,
// BF16 and FP8, its throughput, its error and where that error comes from;
// the range of each format; and the sum inside every product, kept in fp16
// or in fp32, as the exercise.
package precision

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"math"
	"strings"

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
	fast    bool   // cuBLASLt's FP8 fast accumulation (blas.GEMM.FastAccum)
}

// formats are the five precisions, in the order every table lists them.
// FP8 alone is uploaded with B transposed and writes BF16: cuBLASLt takes
// FP8 only in its TN layout, and the blas package's FP8 product writes
// BF16.
var formats = []format{
	{"fp32", gpu.FP32, gpu.FP32, blas.Compute32F, 1e-5, "1/8/23", gpu.PeakFP32, false, false},
	{"tf32", gpu.FP32, gpu.FP32, blas.Compute32FFastTF32, 1e-2, "1/8/10", gpu.PeakTF32, false, false},
	{"fp16", gpu.FP16, gpu.FP16, blas.Compute32F, 1e-2, "1/5/10", gpu.PeakFP16, false, false},
	{"bf16", gpu.BF16, gpu.BF16, blas.Compute32F, 1e-2, "1/8/7", gpu.PeakBF16, false, false},
	{fp8, gpu.FP8E4M3, gpu.BF16, blas.Compute32F, 1e-1, "1/4/3", gpu.PeakFP8, true, false},
}

// fp16TN is FP16 uploaded as FP8 is, with B transposed: the one change
// between fp16 and it is the layout, a control for FP8's speed.
var fp16TN = format{"fp16 tn", gpu.FP16, gpu.FP16, blas.Compute32F, 1e-2, "1/5/10", gpu.PeakFP16, true, false}

// fp8Fast is the FP8 product with cuBLASLt's fast accumulation on, the one
// change from fp8: what it buys in speed and costs in error.
var fp8Fast = format{fp8 + " fast", gpu.FP8E4M3, gpu.BF16, blas.Compute32F, 1e-1, "1/4/3", gpu.PeakFP8, true, true}

// The names that steps list.
const (
	fp8  = "fp8 e4m3"
	fp16 = "fp16"
)

// allFormats are the five precisions and the two variants that change one
// thing each, fp16TN and fp8Fast: every impl of the product.
func allFormats() []format { return append(formats[:len(formats):len(formats)], fp16TN, fp8Fast) }

// formatNames are the five precisions' names, what the Check and
// Throughput steps run: fp16TN and fp8Fast run in a step of their own.
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
	// layout times fp16 as FP8 takes its operands, beside both, and FP8
	// with fast accumulation beside FP8, in rounds: the ratios are
	// medians of paired rounds.
	layout := &lessons.Sweep{Title: "FP16 with B transposed as FP8 takes it, and FP8 with fast accumulation", XLabel: "matrix size (square, one side)",
		Impls: []string{fp16, fp16TN.name, fp8, fp8Fast.name}, Rounds: 3,
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
		summary := fmt.Sprintf("%s, %s, %s, writes %s", f.bits, lib, layout, f.out)
		if f.fast {
			summary += ", fast accumulation"
		}
		im := lessons.Impl{Name: f.name, Summary: summary, Library: true, Peak: f.peak}
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
	rounded map[gpu.DType][2][]float64 // by input type: A and B as rounded for upload, for CheckRounded
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
		Type: f.in, OutType: f.out, Compute: f.compute, TransB: f.transB, FastAccum: f.fast}}, nil
}

// Poison fills C with NaN in the output's own format.
func (c *pcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dc, Value: lessons.PoisonWord(c.last.out), Count: int64(c.m * c.n)})
}

// Check compares C with the float64 product of the unrounded inputs, as a
// whole: the error the precision costs.
func (c *pcase) Check() (numeric.CheckStats, error) {
	got, err := c.output()
	if err != nil {
		return numeric.CheckStats{}, err
	}
	return numeric.MatmulCheck(got, c.a64, c.b64, c.m, c.n, c.k, c.sample, c.last.tol, true)
}

// CheckRounded compares C, as Check does, with the float64 product of the
// inputs as the last impl's format rounded them for upload: the rounding
// of the inputs taken out, what is left is the error of the sums and of
// the output's rounding.
func (c *pcase) CheckRounded() (numeric.CheckStats, error) {
	got, err := c.output()
	if err != nil {
		return numeric.CheckStats{}, err
	}
	if c.rounded == nil {
		c.rounded = map[gpu.DType][2][]float64{}
	}
	ab, ok := c.rounded[c.last.in]
	if !ok {
		round := c.last.roundIn
		ab = [2][]float64{rounded64(c.a, round), rounded64(c.b, round)}
		c.rounded[c.last.in] = ab
	}
	return numeric.MatmulCheck(got, ab[0], ab[1], c.m, c.n, c.k, c.sample, c.last.tol, true)
}

// output reads C back, in float32 whatever its format.
func (c *pcase) output() ([]float32, error) {
	if c.last.out == gpu.FP32 {
		return gpu.Download[float32](c.env.Dev, c.dc, c.m*c.n)
	}
	h, err := gpu.Download[uint16](c.env.Dev, c.dc, c.m*c.n)
	if err != nil {
		return nil, err
	}
	got := make([]float32, len(h))
	for i, x := range h {
		if c.last.out == gpu.FP16 {
			got[i] = gpu.Float16From(x)
		} else {
			got[i] = gpu.BFloat16From(x)
		}
	}
	return got, nil
}

// roundIn rounds an input as the lesson rounds it before it uploads it in
// f's input type. An FP32 input is uploaded as it is (what TF32's tensor
// cores then do to it happens on the GPU).
func (f format) roundIn(v float32) float32 {
	switch f.in {
	case gpu.FP16:
		return round16(v)
	case gpu.BF16:
		return roundBF16(v)
	case gpu.FP8E4M3:
		return round8(v)
	}
	return v
}

// rounded64 is v with round applied to every element, in float64.
func rounded64(v []float32, round func(float32) float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(round(x))
	}
	return out
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

// layoutStep measures sw (fp16; fp16 with B transposed as FP8 takes it;
// fp8; fp8 with fast accumulation) and checks each of its impls once at
// each of layoutChecks, then shows each one's rate as a share of fp16's
// and of fp8's at each size, the median of the rounds' ratios with their
// range, and below it each one's errors: on a GPU what it measures,
// without one what was recorded. A variant that fails, in the sweep or a
// check, leaves the others' figures to show; the step then returns its
// error, after the tables.
func layoutStep(sw *lessons.Sweep) func(env *lessons.Env, l *lessons.Lesson, step string) error {
	return func(env *lessons.Env, l *lessons.Lesson, step string) error {
		serr := sw.Do(env, l, step)
		if errors.Is(serr, lessons.ErrStopped) {
			return serr
		}
		checks, cerr := env.LiveOr(func() ([]lessons.Result, error) {
			var out []lessons.Result
			var first error
			for _, s := range layoutChecks {
				rs, err := checkAt(env, l, step, sw.Impls, s)
				out = append(out, rs...)
				if errors.Is(err, lessons.ErrStopped) {
					return out, err
				}
				first = cmp.Or(first, err)
			}
			return out, first
		}, func() ([]lessons.Result, error) { return l.Recorded().Filter(step, "check"), nil })
		if errors.Is(cerr, lessons.ErrStopped) {
			return cerr
		}
		rs := env.Results.Filter(step, "bench")
		if len(rs) == 0 {
			rs = l.Recorded().Filter(step, "bench")
		}
		if t := layoutTable(rs); t != nil {
			env.PrintTable(t)
		}
		if t := layoutErrors(checks); t != nil {
			fmt.Fprintln(env.Out)
			env.PrintTable(t)
		}
		return cmp.Or(serr, cerr)
	}
}

// layoutTable sets each timed point's rate beside fp16's at its size, and
// fp8's and fp8Fast's beside fp8's; nil where fp16 was not timed.
func layoutTable(rs []lessons.Result) *lessons.Table {
	base := map[string]map[string]lessons.Result{fp16: {}, fp8: {}} // by variant, then size
	for _, r := range rs {
		if b, ok := base[r.Variant]; ok {
			b[r.Size] = r
		}
	}
	if len(base[fp16]) == 0 {
		return nil
	}
	t := &lessons.Table{Headers: []string{"variant", "size", "TFLOP/s", "× fp16 (median of rounds, range)", "× " + fp8},
		Right: []bool{false, false, true, true, true}, Notes: []string{lessons.ResultSet{Results: rs}.Source()}}
	for _, r := range rs {
		if r.Throughput == 0 {
			continue
		}
		of16, of8 := "1", "—"
		if r.Variant != fp16 {
			of16 = lessons.RatioOf(r, base[fp16][r.Size]).Text("%.2f")
		}
		switch r.Variant {
		case fp8:
			of8 = "1"
		case fp8Fast.name:
			of8 = lessons.RatioOf(r, base[fp8][r.Size]).Text("%.2f")
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.Size, fmt.Sprintf("%.1f", r.Throughput), of16, of8})
	}
	return t
}

// layoutErrors sets each variant's two errors at each size it was checked
// at side by side: against the product of the unrounded inputs (the Check
// step's), and against the product of the inputs as it rounded them
// (what its sums and its output's rounding cost); nil where nothing was
// checked.
func layoutErrors(checks []lessons.Result) *lessons.Table {
	type key struct{ variant, size string }
	var order []key
	cells := map[key][2]string{}
	for _, r := range checks {
		size, col := r.Size, 0
		if s, ok := strings.CutSuffix(r.Size, roundedLabel); ok {
			size, col = s, 1
		}
		k := key{r.Variant, size}
		c, seen := cells[k]
		if !seen {
			order = append(order, k)
			c = [2]string{"—", "—"}
		}
		switch {
		case r.Passed:
			c[col] = fmt.Sprintf("%.2e", r.MaxRelErr)
		case r.MaxRelErr > 0:
			c[col] = fmt.Sprintf("%.2e (failed)", r.MaxRelErr)
		default:
			c[col] = "failed"
		}
		cells[k] = c
	}
	if len(order) == 0 {
		return nil
	}
	t := &lessons.Table{Headers: []string{"variant", "checked at", "‖out − ref‖/‖ref‖", "against its rounded inputs"},
		Right: []bool{false, false, true, true},
		Notes: []string{"ref: the product of the inputs as drawn; against its rounded inputs: against the product of the same inputs rounded " +
			"as the variant uploads them. Both multiplied and summed in float64, over all of C, or a sample of its elements where C is too " +
			"large to recompute on the CPU; at a size, every variant gets the same inputs and the same sample.",
			lessons.ResultSet{Results: checks}.Source()}}
	for _, k := range order {
		c := cells[k]
		t.Rows = append(t.Rows, []string{k.variant, k.size, c[0], c[1]})
	}
	return t
}

// modelSize is the check size every format runs (FP8 needs multiples of
// 16), where the step "FP8's layout" checks its impls.
var modelSize = lessons.Size{1024, 1008, 528}

// layoutChecks are the sizes the step "FP8's layout" checks its impls at:
// modelSize, and the same C with sums as long as the largest product the
// step times (K = 8192), where an error of the sums has the longest to
// grow.
var layoutChecks = []lessons.Size{modelSize, {1024, 1008, 8192}}

// roundedLabel ends the size label of a check against the product of the
// rounded inputs (pcase.CheckRounded).
const roundedLabel = ", against the rounded inputs"

// checkAt sets up size s once and runs each impl of the lesson's product
// named in names on it, on the same inputs, and records two errors of
// each as checks of step: the Check step's ‖out − ref‖/‖ref‖, labelled
// with the size, and the same against the product of the inputs as the
// impl rounded them (pcase.CheckRounded), labelled with the size and
// roundedLabel. An impl that does not run is recorded as failed, with
// why, and the others still run; the first such error is returned.
func checkAt(env *lessons.Env, l *lessons.Lesson, step string, names []string, s lessons.Size) ([]lessons.Result, error) {
	cs, err := env.Setup(l.Problem, s)
	if err != nil {
		return nil, err
	}
	defer cs.Free()
	c, ok := cs.(*pcase)
	if !ok {
		return nil, fmt.Errorf("precision: the product's case at %s is a %T, not this lesson's", s, cs)
	}
	var out []lessons.Result
	var first error
	for _, name := range names {
		if env.Ctx != nil && env.Ctx.Err() != nil {
			return out, lessons.ErrStopped
		}
		f, err := formatOf(name)
		if err != nil {
			return out, err
		}
		ops, err := c.Ops(lessons.Impl{Name: name, Library: true}, gpu.Kernel{}, 0)
		if err == nil {
			err = c.Poison()
		}
		if err == nil {
			err = env.Dev.Run(ops...)
		}
		if err != nil {
			err = fmt.Errorf("%s at %s: %w", name, s, err)
			for _, label := range []string{s.String(), s.String() + roundedLabel} {
				out = append(out, env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: name, Size: label, Dims: s,
					DType: l.Problem.DType, Tolerance: f.tol, Detail: err.Error()}))
			}
			fmt.Fprintln(env.Out, err)
			first = cmp.Or(first, err)
			continue
		}
		for _, chk := range []struct {
			label string
			check func() (numeric.CheckStats, error)
		}{{s.String(), c.Check}, {s.String() + roundedLabel, c.CheckRounded}} {
			st, err := chk.check()
			r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: name, Size: chk.label, Dims: s, DType: l.Problem.DType,
				MaxRelErr: st.MaxRelErr, Tolerance: f.tol, Passed: err == nil}
			if err != nil {
				r.Detail = err.Error()
			}
			out = append(out, env.Record(r))
		}
	}
	return out, first
}
