package precision

import (
	"fmt"
	"math"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// limits is what a format holds, read from its bit patterns: the largest
// finite value, the smallest normal and subnormal ones, and the spacing
// of its values just above 1 (2 to the minus its mantissa bits).
type limits struct {
	largest, normal, subnormal, spacing float64
}

// limitsOf returns the limits of the format called name, each decoded
// from the bits that hold it: 0x7bff is fp16's largest, 0x0400 its
// smallest normal, 0x0001 its smallest subnormal, 0x3c01 the value after
// 1. TF32 is FP32 with the low 13 mantissa bits zero.
func limitsOf(name string) limits {
	f32 := func(b uint32) float64 { return float64(math.Float32frombits(b)) }
	f16 := func(b uint16) float64 { return float64(gpu.Float16From(b)) }
	b16 := func(b uint16) float64 { return float64(gpu.BFloat16From(b)) }
	f8 := func(b uint8) float64 { return float64(gpu.Float8E4M3From(b)) }
	switch name {
	case "fp32":
		return limits{f32(0x7f7fffff), f32(0x00800000), f32(0x00000001), f32(0x3f800001) - 1}
	case "tf32":
		return limits{f32(0x7f7fe000), f32(0x00800000), f32(0x00002000), f32(0x3f802000) - 1}
	case "fp16", "fp16 tn":
		return limits{f16(0x7bff), f16(0x0400), f16(0x0001), f16(0x3c01) - 1}
	case "bf16":
		return limits{b16(0x7f7f), b16(0x0080), b16(0x0001), b16(0x3f81) - 1}
	case fp8:
		return limits{f8(0x7e), f8(0x08), f8(0x01), f8(0x39) - 1}
	}
	panic("precision: no limits for " + name)
}

// round16, roundBF16 and round8 round a float32 to fp16, bf16 and FP8
// E4M3 and give back the value: the conversions this lesson rounds its
// inputs with before it uploads them, to nearest (ties to even). fp16 and
// bf16 overflow to ±Inf; E4M3, which has no infinity, saturates at ±448.
func round16(v float32) float32   { return gpu.Float16From(gpu.Float16Bits(v)) }
func roundBF16(v float32) float32 { return gpu.BFloat16From(gpu.BFloat16Bits(v)) }
func round8(v float32) float32    { return gpu.Float8E4M3From(gpu.Float8E4M3Bits(v)) }

// roundTF32 rounds a float32 to TF32, to nearest (ties to even): 10
// mantissa bits of fp32's 23.
func roundTF32(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7f800000 == 0x7f800000 {
		return v // Inf and NaN stay
	}
	b += 0xfff + (b>>13)&1
	return math.Float32frombits(b &^ 0x1fff)
}

// truncTF32 drops FP32's low 13 mantissa bits: TF32 rounded toward zero,
// the other way a tensor core could take FP32 operands.
func truncTF32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ 0x1fff) }

// rangeValues are the values the Range step rounds to each format: one
// past FP16's largest, one in range everywhere, and smaller ones down
// past FP16's smallest subnormal.
var rangeValues = []float64{70000, 300, 0.1, 1e-3, 1e-5, 1e-7, 1e-8}

// lossScales are the factors S the Range step multiplies gradients by
// before rounding them to fp16 (and divides out after): 1, the 2¹⁶ that
// PyTorch's GradScaler starts from, and 2²⁴.
var lossScales = []float64{1, 1 << 16, 1 << 24}

// gradients are the gradients it scales: from below FP16's smallest
// subnormal to above 1.
var gradients = []float64{1e-9, 1e-7, 1e-5, 1e-3, 0.1, 2}

// rangeTables prints each format's limits, what a few values become in
// each, and what scaling by S before rounding to fp16 does to gradients:
// exact conversions, computed here, with no GPU.
func rangeTables(env *lessons.Env, l *lessons.Lesson, step string) error {
	for i, t := range []*lessons.Table{limitsTable(), valuesTable(), gradientsTable()} {
		if i > 0 {
			fmt.Fprintln(env.Out)
		}
		env.PrintTable(t)
	}
	return nil
}

// limitsTable is each format's limits, decoded from its bit patterns.
func limitsTable() *lessons.Table {
	t := &lessons.Table{Headers: []string{"precision", "largest", "smallest normal", "smallest subnormal", "spacing above 1"},
		Right: []bool{false, true, true, true, true},
		Notes: []string{"Each decoded from its bit pattern (fp16: 0x7bff, 0x0400, 0x0001, 0x3c01 − 1)."}}
	for _, f := range formats {
		lim := limitsOf(f.name)
		t.Rows = append(t.Rows, []string{f.name, fmt.Sprintf("%.5g", lim.largest), fmt.Sprintf("%.3g", lim.normal),
			fmt.Sprintf("%.3g", lim.subnormal), fmt.Sprintf("%.3g", lim.spacing)})
	}
	return t
}

// valuesTable is what each of rangeValues becomes in BF16, FP16 and FP8.
func valuesTable() *lessons.Table {
	rounders := []struct {
		name  string
		round func(float32) float32
	}{{"bf16", roundBF16}, {"fp16", round16}, {fp8, round8}}
	t := &lessons.Table{Headers: []string{"value"}, Right: []bool{true},
		Notes: []string{"Rounded to nearest, ties to even; in parentheses the error where it is 1 % or more. E4M3 has no infinity: its conversion here saturates."}}
	for _, r := range rounders {
		t.Headers, t.Right = append(t.Headers, r.name), append(t.Right, true)
	}
	for _, x := range rangeValues {
		row := []string{fmt.Sprintf("%g", x)}
		for _, r := range rounders {
			row = append(row, roundedCell(x, float64(r.round(float32(x)))))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// gradientsTable is what each of gradients comes back as from FP16 under
// each of lossScales, and from BF16 unscaled.
func gradientsTable() *lessons.Table {
	t := &lessons.Table{Headers: []string{"gradient"}, Right: []bool{true},
		Notes: []string{"fp16 × S: the gradient times S, rounded to fp16, divided by S again in fp64."}}
	for _, s := range lossScales {
		t.Headers, t.Right = append(t.Headers, "fp16 × "+scaleName(s)), append(t.Right, true)
	}
	t.Headers, t.Right = append(t.Headers, "bf16"), append(t.Right, true)
	for _, x := range gradients {
		row := []string{fmt.Sprintf("%g", x)}
		for _, s := range lossScales {
			row = append(row, roundedCell(x, scaled16(x, s)))
		}
		t.Rows = append(t.Rows, append(row, roundedCell(x, float64(roundBF16(float32(x))))))
	}
	return t
}

// scaled16 is gradient x multiplied by s, rounded to fp16 and divided by
// s: what a gradient held in fp16 under loss scale s comes back as. s is
// a power of 2, so that multiplying and dividing are exact.
func scaled16(x, s float64) float64 { return float64(round16(float32(x*s))) / s }

// scaleName writes a loss scale as 1 or 2ᵏ.
func scaleName(s float64) string {
	if s == 1 {
		return "1"
	}
	return fmt.Sprintf("2^%d", int(math.Log2(s)))
}

// roundedCell writes what x became, got: +Inf or 0 as such, else the value
// with its relative error where that is 1 % or more.
func roundedCell(x, got float64) string {
	switch {
	case math.IsInf(got, 0):
		return fmt.Sprintf("%+v", got)
	case got == 0:
		return "0"
	}
	s := fmt.Sprintf("%.4g", got)
	if e := (got - x) / x; math.Abs(e) >= 0.01 {
		s += fmt.Sprintf(" (%+.0f%%)", 100*e)
	}
	return s
}
