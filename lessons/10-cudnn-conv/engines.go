package cudnnconv

import (
	"fmt"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/conv"
)

// The two rows recorded for each graph and batch size by engines.
const (
	picked  = "heuristics' pick"
	fastest = "fastest candidate"
)

// engineRow names the result of one graph at one batch size: the engine
// its heuristics picked, or the fastest of their candidates.
func engineRow(graph, which string) string { return graph + " · " + which }

// engines asks the heuristics of each graph, at each batch size of the
// sweep, for their candidate plans and times them all (autotuning, back to
// back): which engine the graph runs without autotuning, and which would
// have been fastest; live, or the recorded table.
func engines(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		var out []lessons.Result
		for _, n := range batches {
			size := lessons.Size{n, benchShape[1], benchShape[2], benchShape[3], benchShape[4]}
			for _, dt := range []gpu.DType{gpu.FP16, gpu.FP32} {
				data := conv.NewData(conv.Of(size), dt)
				for _, name := range graphs {
					if v := variants[name]; v.dt == dt {
						rs, err := engineRows(env, l, step, name, size, data)
						if err != nil {
							return nil, err
						}
						out = append(out, rs...)
					}
				}
			}
		}
		return out, nil
	})
	if !ok {
		return err
	}
	by := map[string]lessons.Result{}
	for _, r := range rs {
		by[r.Variant+"\x00"+r.Size] = r
	}
	t := &lessons.Table{
		Headers: []string{"graph", "batch (N)", "heuristics' pick", "time (µs)", "fastest candidate", "time (µs)"},
		Right:   []bool{false, true, false, true, false, true},
		Notes: []string{"64×112×112 → 64, 3×3; up to 8 candidates a point, each timed back to back as autotuning times them " +
			"(5 runs to warm up, then 9), no L2 flush · " + lessons.ResultSet{Results: rs}.Source()},
	}
	for _, name := range graphs {
		for _, n := range batches {
			label := conv.Label(lessons.Size{n, benchShape[1], benchShape[2], benchShape[3], benchShape[4]})
			p, ok1 := by[engineRow(name, picked)+"\x00"+label]
			f, ok2 := by[engineRow(name, fastest)+"\x00"+label]
			if !ok1 || !ok2 {
				continue
			}
			t.Rows = append(t.Rows, []string{name, fmt.Sprint(n), p.Detail, fmt.Sprintf("%.1f", 1000*p.MedianMs), f.Detail, fmt.Sprintf("%.1f", 1000*f.MedianMs)})
		}
	}
	env.PrintTable(t)
	return nil
}

// engineRows autotunes graph name at size on data and records two rows:
// the heuristics' pick (the plan the graph runs without autotuning) and
// the fastest candidate, each with its engine.
func engineRows(env *lessons.Env, l *lessons.Lesson, step, name string, size lessons.Size, data *conv.Data) ([]lessons.Result, error) {
	v := variants[name]
	b, err := data.Upload(env.Dev, v.dt, v.nhwc)
	if err != nil {
		return nil, err
	}
	defer b.Free(env.Dev)
	g, x, w, _, y := conv.Graph(name, conv.Of(size), v.dt, v.nhwc, false)
	rep, err := g.Plan(env.Dev, b.Bind(x, w, nil, y), cudnnx.Options{Autotune: true, NoCache: true})
	if err != nil {
		return nil, err
	}
	first, ok := firstTimed(rep)
	if !ok {
		return nil, fmt.Errorf("%s at %s: no candidate of the heuristics ran", name, conv.Label(size))
	}
	best := rep.ChosenCandidate()
	var out []lessons.Result
	for _, row := range []struct {
		which string
		c     cudnnx.Candidate
	}{{picked, first}, {fastest, best}} {
		r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: engineRow(name, row.which), Size: conv.Label(size), Dims: size,
			DType: v.dt.String(), MedianMs: row.c.Time.Seconds() * 1e3, Workspace: row.c.Workspace, Unit: "TFLOP/s",
			Throughput: conv.FLOPs(size) / row.c.Time.Seconds() / 1e12, Detail: engineName(row.c, rep)}
		out = append(out, env.Record(r))
	}
	return out, nil
}

// engineName says which engine c is and where it stood in the
// heuristics' list: "engine 41 (1st of 8)".
func engineName(c cudnnx.Candidate, rep cudnnx.PlanReport) string {
	for i, o := range rep.Candidates {
		if o == c {
			return fmt.Sprintf("engine %d (%s of %d)", c.Engine, ordinal(i+1), len(rep.Candidates))
		}
	}
	return fmt.Sprintf("engine %d", c.Engine)
}

// ordinal writes 1 as "1st", 2 as "2nd", 11 as "11th".
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}
