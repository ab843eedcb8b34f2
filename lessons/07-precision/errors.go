package precision

import (
	"fmt"
	"math"
	"math/rand/v2"

	"cudarepl/lessons"
	"cudarepl/numeric"
)

// modelSample is how many elements of C the model of the error computes
// at a size (all of them, where C has fewer).
const modelSample = 8192

// rounding is one way to round a product's operands and its output: a
// format as this lesson runs it, or (TF32) as the tensor cores might.
type rounding struct {
	name    string // a format's name, or a model's
	format  string // the format whose measured error it sits beside; "" for none
	in, out func(float32) float32
}

// keep leaves a value as it is: an FP32 input, or an output written in
// FP32.
func keep(v float32) float32 { return v }

// roundings are the five formats' roundings, and TF32 rounded toward zero
// as the model of what the tensor cores would do if they dropped the bits
// instead of rounding them.
var roundings = []rounding{
	{"fp32", "fp32", keep, keep},
	{"tf32, to nearest", "tf32", roundTF32, keep},
	{"tf32, toward zero", "", truncTF32, keep},
	{"fp16", "fp16", round16, round16},
	{"bf16", "bf16", roundBF16, roundBF16},
	{fp8, fp8, round8, roundBF16}, // FP8 in, BF16 out
}

// modelled is the error of one rounding: of the product of the rounded
// inputs, summed exactly, against the product of the inputs as drawn; and
// of the same with the output rounded too, to FP32 as the accumulator
// holds it and then to the output's format. Both are ‖·‖/‖ref‖ over the
// elements computed.
type modelled struct {
	inputs, output float64
}

// modelErrors computes, for each rounding, the error that rounding alone
// causes in C = A·B of size s: A and B drawn as the check draws them, in
// [−1, 1), from a seed of s; each rounded as the lesson rounds it before
// upload; every product of modelSample elements of C summed in float64,
// whose rounding is 2²⁹ times finer than fp32's, so that what is left is
// the rounding of inputs and output, and no accumulation error.
func modelErrors(s lessons.Size) []modelled {
	m, n, k := s[0], s[1], s[2]
	r := rand.New(rand.NewPCG(uint64(m)<<40|uint64(n)<<20|uint64(k), 7))
	a, b := make([]float32, m*k), make([]float32, k*n)
	for _, v := range [][]float32{a, b} {
		for i := range v {
			v[i] = 2*r.Float32() - 1
		}
	}
	idx := make([]int, min(modelSample, m*n))
	for i := range idx {
		idx[i] = i
		if m*n > modelSample {
			idx[i] = r.IntN(m * n)
		}
	}
	out := make([]modelled, len(roundings))
	numeric.Parallel(len(roundings), 1, func(f0, f1 int) {
		for f := f0; f < f1; f++ {
			rd := roundings[f]
			ra, rb := roundAll(a, rd.in), roundAll(b, rd.in)
			var in, both, ref float64
			for _, e := range idx {
				i, j := e/n, e%n
				var s, sr float64
				for p := 0; p < k; p++ {
					s += float64(a[i*k+p]) * float64(b[p*n+j])
					sr += float64(ra[i*k+p]) * float64(rb[p*n+j])
				}
				o := float64(rd.out(float32(sr)))
				in += (sr - s) * (sr - s)
				both += (o - s) * (o - s)
				ref += s * s
			}
			out[f] = modelled{math.Sqrt(in / ref), math.Sqrt(both / ref)}
		}
	})
	return out
}

// roundAll returns v with f applied to every element.
func roundAll(v []float32, f func(float32) float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

// errorSources sets what rounding alone costs, computed here, beside what
// each format's product measured in the Check step, this session's or
// recorded: a table for each size the checks ran.
func errorSources(env *lessons.Env, l *lessons.Lesson, check *lessons.CheckStep) error {
	checks := env.Latest(l, check)
	measured := map[[2]string]float64{} // by format and size
	var sizes []lessons.Size
	seen := map[string]bool{}
	for _, r := range checks {
		if !r.Passed || r.MaxRelErr == 0 {
			continue
		}
		if !seen[r.Size] {
			seen[r.Size] = true
			sizes = append(sizes, lessons.Size(r.Dims))
		}
		measured[[2]string{r.Variant, r.Size}] = r.MaxRelErr
	}
	fmt.Fprintf(env.Out, "Computed here: the product of the rounded inputs summed exactly, over %d elements of C (all of a smaller C); "+
		"measured: the Check step's ‖out − ref‖/‖ref‖, %s.\n", modelSample, env.About(checks))
	for _, s := range sizes {
		t := &lessons.Table{Headers: []string{"rounding, " + s.String(), "inputs", "inputs and output", "measured on the GPU"},
			Right: []bool{false, true, true, true}}
		for i, m := range modelErrors(s) {
			rd := roundings[i]
			cell := "—"
			if e, ok := measured[[2]string{rd.format, s.String()}]; ok {
				cell = errCell(e)
			}
			t.Rows = append(t.Rows, []string{rd.name, errCell(m.inputs), errCell(m.output), cell})
		}
		fmt.Fprintln(env.Out)
		env.PrintTable(t)
	}
	return nil
}

// errCell writes an error to two digits; 0 as 0.
func errCell(e float64) string {
	if e == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2e", e)
}
