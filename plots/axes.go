package plots

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// wideSpan is how far apart a figure's values may be, largest over
// smallest, before its y axis turns logarithmic: past it, the small values
// would sit on the axis.
const wideSpan = 100

// farCeiling is how far above the largest value a ceiling may stand before
// the y axis turns logarithmic: past it, on a linear axis from 0 the
// values would lie flat in the bottom quarter, too close to compare.
const farCeiling = 4

// spansWide reports whether the positive values vs span more than wideSpan.
func spansWide(vs []float64) bool {
	lo, hi := positiveRange(vs)
	return hi > 0 && hi/lo > wideSpan
}

// positiveRange is the smallest and the largest positive value of vs; 0, 0
// where there is none.
func positiveRange(vs []float64) (lo, hi float64) {
	lo = math.Inf(1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == 0 {
		return 0, 0
	}
	return lo, hi
}

// logWanted reports whether values (the data) drawn beside ceilings read
// better on a log axis: where they span more than wideSpan, or where a
// ceiling stands more than farCeiling times above the largest of them.
func logWanted(values, ceilings []float64) bool {
	if spansWide(values) {
		return true
	}
	_, hi := positiveRange(values)
	_, top := positiveRange(ceilings)
	return hi > 0 && top > farCeiling*hi
}

// logPad and linPad are the room left beyond the data on a log axis (a
// factor) and above it on a linear one (a share): enough for the markers,
// and no more, so that the axis stays near the data.
const (
	logPad = 1.3
	linPad = 0.06
)

// niceStep is the step of about n ticks over span: 1, 2, 2.5 or 5 times a
// power of ten.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks labels a linear axis at round values, 1, 2, 2.5 or 5 times a
// power of ten apart, written without trailing zeros (gonum's default
// writes "2500.00"), with an unlabelled tick between each two.
type linearTicks struct{}

// Ticks returns the tick marks of [min, max].
func (linearTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: formatTick(min)}}
	}
	step := niceStep(max-min, 6)
	var ticks []plot.Tick
	for i := math.Ceil(min/step*2 - 1e-9); i/2*step <= max+step*1e-9; i++ {
		v := i / 2 * step
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = formatTick(v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// logTicks labels a log axis at powers of ten, and where the axis spans
// less than three decades also at 2 and 5 times them (at 2, 3 and 5
// below one decade), so that an axis kept near its data still has labels;
// the other integers times a power of ten get unlabelled ticks.
type logTicks struct{}

// Ticks returns the tick marks of [min, max].
func (logTicks) Ticks(min, max float64) []plot.Tick {
	decades := math.Log10(max / min)
	labelled := map[float64]bool{1: true}
	switch {
	case decades < 1:
		labelled[2], labelled[3], labelled[5] = true, true, true
	case decades < 3:
		labelled[2], labelled[5] = true, true
	}
	every := math.Max(1, math.Ceil(decades/7)) // at most about 7 labelled decades
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		p := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * p
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if labelled[m] && (m != 1 || math.Mod(e, every) == 0) {
				t.Label = formatTick(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// formatTick writes an axis value plainly ("0.05", "2500", "100000"), and
// past a million as a power of ten ("1e7") or a multiple of one ("2e7").
func formatTick(v float64) string {
	a := math.Abs(v)
	if a == 0 {
		return "0"
	}
	v = roundSig(v, 6)
	if a >= 1e6 || a < 1e-3 {
		s := strconv.FormatFloat(v, 'e', -1, 64)
		s = strings.Replace(strings.Replace(s, "e+0", "e", 1), "e+", "e", 1)
		return strings.Replace(s, "e-0", "e-", 1)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// roundSig rounds v to n significant digits, so that 0.30000000000000004
// is written 0.3.
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// powerTicks labels a log axis at powers of two, which is how sizes are
// chosen here; it falls back to powers of ten over wide ranges.
type powerTicks struct{}

// Ticks returns the tick marks of [min, max].
func (powerTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(math.Log2(min)), math.Floor(math.Log2(max))
	if hi-lo > 24 || hi < lo {
		return logTicks{}.Ticks(min, max)
	}
	step := math.Max(1, math.Ceil((hi-lo)/8))
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		t := plot.Tick{Value: math.Pow(2, e)}
		if math.Mod(e-lo, step) == 0 {
			t.Label = powerLabel(e, hi)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// powerLabel writes 2^e plainly when the axis ends at 2^13 or below, and as
// "2^e" on axes that reach further, so that one axis uses one style.
func powerLabel(e, top float64) string {
	if top <= 13 && e >= 0 {
		return fmt.Sprintf("%d", int(math.Pow(2, e)))
	}
	return fmt.Sprintf("2^%d", int(e))
}
