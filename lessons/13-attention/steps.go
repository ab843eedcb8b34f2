package attention

import (
	"fmt"
	"slices"
	"strings"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/attn"
	"cudarepl/plots"
)

// breakdownS is the sequence length the breakdown measures at.
const breakdownS = 4096

// whole names the measurement of a chain run end to end, beside its parts.
const whole = "whole chain"

// breakdown times each launch of each chain alone, non-causal and causal,
// at B=4 H=16 S=4096 d=64, and draws where the time goes. Each part is
// recorded as "<chain>: <launch>", and the chain run end to end as
// "<chain>: whole chain", so that the parts can be held against the whole.
func breakdown(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		var out []lessons.Result
		for _, size := range []lessons.Size{{benchB, benchH, breakdownS, benchD}, {benchB, benchH, breakdownS, benchD, 1}} {
			c, err := env.Setup(l.Problem, size)
			if err != nil {
				return out, err
			}
			rs, err := timeParts(env, l, step, c.(*acase), size)
			c.Free()
			out = append(out, rs...)
			if err != nil {
				return out, err
			}
		}
		return out, nil
	})
	if !ok {
		return err
	}
	t, fig := breakdownTable(rs)
	t.Notes = append(t.Notes, env.About(rs))
	env.PrintTable(t)
	if tt, ok := trafficTable(rs); ok {
		tt.Notes = append(tt.Notes, env.About(rs))
		env.PrintTable(tt)
	}
	fig.Subtitle = lessons.ResultSet{Results: rs}.Source()
	return env.Figure(l, step, fig)
}

// timeParts checks each chain at size once, then times it whole and each
// of its launches alone.
func timeParts(env *lessons.Env, l *lessons.Lesson, title string, c *acase, size lessons.Size) ([]lessons.Result, error) {
	var out []lessons.Result
	for _, impl := range []string{chain, inAlpha} {
		parts, err := c.chain.Steps(impl == inAlpha)
		if err != nil {
			return out, err
		}
		ops := make([]gpu.Op, len(parts))
		for i, p := range parts {
			ops[i] = p.Op
		}
		if err := c.Poison(); err != nil {
			return out, err
		}
		if err := env.Dev.Run(ops...); err != nil {
			return out, err
		}
		if _, err := c.Check(); err != nil {
			return out, fmt.Errorf("%s, %s: %w", impl, attn.Label(size), err)
		}
		timed := append([]attn.ChainLaunch{{Name: whole}}, parts...)
		for _, p := range timed {
			list := []gpu.Op{p.Op}
			if p.Op == nil {
				list = ops
			}
			t, err := env.Dev.Bench(gpu.Bench{Name: impl + ": " + p.Name, Ops: [][]gpu.Op{list}, Reps: 20})
			if err != nil {
				return out, err
			}
			out = append(out, env.Record(lessons.Result{Lesson: l.Slug, Step: title, Kind: "bench", Variant: impl + ": " + p.Name,
				Size: attn.Label(size), Dims: size, DType: "float16"}.WithTimes(t.Stats())))
		}
	}
	return out, nil
}

// breakdownTable lays the parts of each chain side by side, in ms, with
// their sum against the chain timed whole, and stacks them in a figure.
func breakdownTable(rs []lessons.Result) (*lessons.Table, plots.Bars) {
	type group struct {
		name  string
		parts map[string]float64
		whole float64
	}
	var groups []*group
	byName := map[string]*group{}
	var partNames []string
	seen := map[string]bool{}
	for _, r := range rs {
		impl, part, ok := strings.Cut(r.Variant, ": ")
		if !ok {
			continue
		}
		name := impl
		if attn.Of(r.Dims).Causal {
			name += ", causal"
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name, parts: map[string]float64{}}
			byName[name] = g
			groups = append(groups, g)
		}
		if part == whole {
			g.whole = r.MedianMs
			continue
		}
		part = strings.Replace(part, "Q·Kᵀ, scaled", "Q·Kᵀ", 1) // one colour for the first product
		g.parts[part] = r.MedianMs
		if !seen[part] {
			seen[part] = true
			partNames = append(partNames, part)
		}
	}
	// The product parts first and last, as the chain runs them.
	order := map[string]int{"Q·Kᵀ (cuBLAS)": 0, "scale_h": 1, "causal_mask_h": 2, "softmax_h": 3, "P·V (cuBLAS)": 4}
	slices.SortStableFunc(partNames, func(a, b string) int { return order[a] - order[b] })
	t := &lessons.Table{Headers: append(append([]string{fmt.Sprintf("S = %d (ms)", breakdownS)}, partNames...), "sum", whole, "S×S passes")}
	t.Right = make([]bool, len(t.Headers))
	for i := 1; i < len(t.Right); i++ {
		t.Right[i] = true
	}
	fig := plots.Bars{Title: fmt.Sprintf("Where attention's time goes, B=%d H=%d S=%d d=%d, fp16", benchB, benchH, breakdownS, benchD),
		YLabel: "ms, each launch timed alone", Stacked: true}
	for _, n := range partNames {
		fig.Series = append(fig.Series, plots.BarSeries{Name: n})
	}
	for _, g := range groups {
		row := []string{g.name}
		sum, between := 0.0, 0.0
		for i, n := range partNames {
			v, ok := g.parts[n]
			fig.Series[i].Values = append(fig.Series[i].Values, v)
			if !ok {
				row = append(row, "—")
				continue
			}
			row = append(row, fmt.Sprintf("%.3f", v))
			sum += v
			if !strings.Contains(n, "cuBLAS") {
				between += v
			}
		}
		fig.Groups = append(fig.Groups, g.name)
		row = append(row, fmt.Sprintf("%.3f", sum), fmt.Sprintf("%.3f", g.whole), fmt.Sprintf("%.0f%% of the time", 100*between/sum))
		t.Rows = append(t.Rows, row)
	}
	t.Notes = []string{"S×S passes: the share of the time spent between the two products, where scale_h and softmax_h read and write every score, and causal_mask_h writes the half above the diagonal"}
	return t, fig
}

// traffic is what one launch of the chain must move and compute at shape
// a: the S×S scores or probabilities it reads and writes, Q, K, V and O
// where it touches them, and for a product its floating-point operations,
// all S² scores' whether causal or not (cuBLAS knows no mask).
func traffic(part string, a attn.Shape) (read, write, flop float64, ok bool) {
	heads, s, d := float64(a.Heads()), float64(a.S), float64(a.D)
	scores, qkvo := 2*heads*s*s, 2*heads*s*d // fp16: the S×S scores or probabilities, and one of Q, K, V and O
	switch part {
	case "Q·Kᵀ (cuBLAS)", "Q·Kᵀ, scaled (cuBLAS)":
		return 2 * qkvo, scores, 2 * heads * s * s * d, true
	case "scale_h", "softmax_h":
		return scores, scores, 0, true
	case "causal_mask_h":
		return 0, heads * s * (s - 1), 0, true // (S − 1)·S/2 halves a head
	case "P·V (cuBLAS)":
		return scores + qkvo, qkvo, 2 * heads * s * s * d, true
	}
	return 0, 0, 0, false
}

// trafficTable lists each launch of the causal chain, which runs them all,
// with the bytes it must move, its time and the rate that makes, and for
// the products their TFLOP/s; ok is false where rs holds no causal chain.
func trafficTable(rs []lessons.Result) (*lessons.Table, bool) {
	const gib = 1 << 30
	t := &lessons.Table{Headers: []string{fmt.Sprintf("%s, causal, S = %d", chain, breakdownS), "reads (GiB)", "writes (GiB)", "time (ms)", "GB/s", "TFLOP/s"},
		Right: []bool{false, true, true, true, true, true}}
	for _, r := range rs {
		impl, part, found := strings.Cut(r.Variant, ": ")
		a := attn.Of(r.Dims)
		if !found || impl != chain || !a.Causal || r.MedianMs <= 0 {
			continue
		}
		read, write, flop, ok := traffic(part, a)
		if !ok {
			continue
		}
		sec := r.MedianMs / 1e3
		tflops := "—"
		if flop > 0 {
			tflops = fmt.Sprintf("%.0f", flop/sec/1e12)
		}
		t.Rows = append(t.Rows, []string{part, fmt.Sprintf("%.2f", read/gib), fmt.Sprintf("%.2f", write/gib),
			fmt.Sprintf("%.3f", r.MedianMs), fmt.Sprintf("%.0f", (read+write)/sec/1e9), tflops})
	}
	t.Notes = []string{"reads and writes: the least each launch must move, the S×S matrices at 2 bytes a score; TFLOP/s: 2·S²·d a head for each product, over all S² scores"}
	return t, len(t.Rows) > 0
}
