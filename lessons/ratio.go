package lessons

import (
	"fmt"
	"slices"
)

// Ratio is a result's throughput over a baseline's: a library impl's at
// the same size, or the ceiling measured beside it. Where both were
// measured over the same interleaved rounds (Result.Rounds), it is the
// median of the ratios within each round, whose two measurements were
// taken close in time, and Low and High are the lowest and highest of
// those; a baseline that moves between rounds then moves the range, not
// the ratio. Otherwise it is the ratio of the two throughputs, over one
// round.
type Ratio struct {
	Median    float64
	Low, High float64
	Rounds    int // how many rounds it is over; 0: no ratio (no baseline)
}

// RatioOf returns r's throughput over base's, round by round where both
// have rounds: round i of r against round i of base, as far as the one
// with fewer goes (a sweep stopped part way). It is the zero Ratio where
// base has no throughput.
func RatioOf(r, base Result) Ratio {
	n := min(len(r.Rounds), len(base.Rounds))
	if n == 0 {
		if base.Throughput <= 0 {
			return Ratio{}
		}
		q := r.Throughput / base.Throughput
		return Ratio{Median: q, Low: q, High: q, Rounds: 1}
	}
	var qs []float64
	for i := range n {
		if base.Rounds[i] > 0 {
			qs = append(qs, r.Rounds[i]/base.Rounds[i])
		}
	}
	if len(qs) == 0 {
		return Ratio{}
	}
	return Ratio{Median: median(qs), Low: slices.Min(qs), High: slices.Max(qs), Rounds: len(qs)}
}

// Times returns q with its median and range multiplied by k: Times(100)
// for a percentage.
func (q Ratio) Times(k float64) Ratio {
	q.Median, q.Low, q.High = k*q.Median, k*q.Low, k*q.High
	return q
}

// Text writes the median with verb (such as "%.2f") and, where q is over
// more than one round, the range in brackets after it: "0.94 (0.92–0.96)".
// The zero Ratio is "—".
func (q Ratio) Text(verb string) string {
	switch {
	case q.Rounds == 0:
		return "—"
	case q.Rounds == 1:
		return fmt.Sprintf(verb, q.Median)
	}
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", q.Median, q.Low, q.High)
}

// String is Text("%.2f").
func (q Ratio) String() string { return q.Text("%.2f") }

// median is the middle of xs; of an even number, the lower of the two
// middle ones, so that the median of a point's rounds is one of its
// rounds. xs is not changed.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// ceilingOf is the ceiling r was measured beside, as a result of its own:
// the baseline of a memory-bound problem, its rounds included.
func ceilingOf(r Result) Result {
	return Result{Variant: r.CeilingName, Size: r.Size, Dims: r.Dims, Throughput: r.Ceiling, Rounds: r.CeilingRounds,
		Unit: r.Unit, GPU: r.GPU}
}
