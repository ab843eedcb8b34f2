// Package precision is lesson 7: one matrix product in FP32, TF32, FP16,
// BF16 and FP8, its throughput, its error and its memory.
package precision

import (
	"embed"
	"fmt"
	"math"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md results
var files embed.FS

// format is one precision: how its operands are stored and multiplied.
type format struct {
	name    string
	in, out gpu.DType
	compute blas.Compute
	tol     float64
	bits    string // sign/exponent/mantissa
	peak    string // the GPU's peak that bounds it
}

var formats = []format{
	{"fp32", gpu.FP32, gpu.FP32, blas.Compute32F, 1e-5, "1/8/23", gpu.PeakFP32},
	{"tf32", gpu.FP32, gpu.FP32, blas.Compute32FFastTF32, 1e-2, "1/8/10 in the tensor cores", gpu.PeakTF32},
	{"fp16", gpu.FP16, gpu.FP16, blas.Compute32F, 1e-2, "1/5/10", gpu.PeakFP16},
	{"bf16", gpu.BF16, gpu.BF16, blas.Compute32F, 1e-2, "1/8/7", gpu.PeakBF16},
	{"fp8 e4m3", gpu.FP8E4M3, gpu.BF16, blas.Compute32F, 1e-1, "1/4/3", gpu.PeakFP8},
}

func formatOf(name string) (format, error) {
	for _, f := range formats {
		if f.name == name {
			return f, nil
		}
	}
	return format{}, fmt.Errorf("precision has no variant %q", name)
}

func init() {
	check := &lessons.CheckStep{}
	throughput := &lessons.Sweep{Title: "GEMM throughput by precision", XLabel: "matrix size (square, one side)",
		Sizes: []lessons.Size{{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}}}
	lessons.Register(lessons.Def{
		Number: 7, Slug: "precision", Files: files, Problem: problem(),
		Actions: map[string]lessons.Action{
			"Five precisions": &lessons.Run{F: memoryTable},
			"Check":           check,
			"Throughput":      throughput,
			"Cost and benefit": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error {
				return tradeoff(env, l, throughput, check)
			}},
			"The clock under load": &lessons.Run{Name: "measure", F: sustained},
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
	for _, f := range formats {
		im := lessons.Impl{Name: f.name, Summary: f.bits, Library: true, Peak: f.peak}
		if f.in == gpu.FP8E4M3 {
			im.Summary += ", cuBLASLt"
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
	dev     map[string][2]gpu.DevicePtr // by input type: A and B as uploaded
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

// upload puts A and B on the GPU in type t, once: FP8 wants B transposed.
func (c *pcase) upload(t gpu.DType) ([2]gpu.DevicePtr, error) {
	if p, ok := c.dev[t.String()]; ok {
		return p, nil
	}
	var p [2]gpu.DevicePtr
	b := c.b
	if t == gpu.FP8E4M3 {
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
	c.dev[t.String()] = p
	return p, nil
}

func (c *pcase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
	f, err := formatOf(impl.Name)
	if err != nil {
		return nil, err
	}
	ab, err := c.upload(f.in)
	if err != nil {
		return nil, err
	}
	c.last = f
	return []gpu.Op{blas.GEMM{M: c.m, N: c.n, K: c.k, A: ab[0], B: ab[1], C: c.dc, Alpha: 1,
		Type: f.in, OutType: f.out, Compute: f.compute, TransB: f.in == gpu.FP8E4M3}}, nil
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

// memory is C in fp32 and A and B in every input format that the impls
// ask for (fp32, fp16, bf16, fp8) on the device; on the host, A and B in
// fp32 and float64, one encoding at a time, and C read back.
func memory(s lessons.Size) lessons.Memory {
	ab, c := int64(s[0]*s[2]+s[2]*s[1]), int64(s[0]*s[1])
	return lessons.Memory{Device: 4*c + (4+2+2+1)*ab, Host: 12*ab + 2*4*ab + 8*c}
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
		Right: []bool{false, false, true, true, true}}
	largest := map[gpu.DType]string{gpu.FP32: "3.4e38", gpu.FP16: "65504", gpu.BF16: "3.4e38", gpu.FP8E4M3: "448"}
	for _, f := range formats {
		t.Rows = append(t.Rows, []string{f.name, f.bits, fmt.Sprint(f.in.Size()),
			fmt.Sprintf("%.0f", float64(4096*4096*f.in.Size())/(1<<20)), largest[f.in]})
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
