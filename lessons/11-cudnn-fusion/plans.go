package cudnnfusion

import (
	"fmt"
	"time"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/conv"
)

// freshProcesses is how many new GPU processes rebuild starts, to time
// what the first plan of a program costs.
const freshProcesses = 3

// The rows of the rebuild table, in order.
const (
	loadCUDNN   = "fresh process: load cuDNN, create its handle"
	firstBuild  = "fresh process: the first build of the plan"
	firstInside = "fresh process: that build, timed in the GPU's process"
	rebuilt     = "rebuild: heuristics, configs, finalize"
	rebuiltIn   = "rebuild, timed in the GPU's process"
	lookup      = "reuse: cache lookup"
	roundTrip   = "an empty request (cuMemGetInfo): the round trip alone"
)

// rebuild times, from this process, what a plan for the fused layer costs:
// in a new GPU process, loading cuDNN and the first build; in this one,
// building it again with nothing cached, finding it in the cache, and a
// request that does nothing, the round trip to the GPU's process alone.
// Each build is also timed inside the GPU's process (PlanReport.BuildTime).
func rebuild(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		times := map[string][]time.Duration{}
		for range freshProcesses {
			load, build, inside, err := firstPlan()
			if err != nil {
				return nil, err
			}
			times[loadCUDNN] = append(times[loadCUDNN], load)
			times[firstBuild] = append(times[firstBuild], build)
			times[firstInside] = append(times[firstInside], inside)
		}
		g, bind, free, err := layer(env)
		if err != nil {
			return nil, err
		}
		defer free()
		if _, err := g.Plan(env.Dev, bind, cudnnx.Options{}); err != nil { // cached from here on, whatever ran before
			return nil, err
		}
		for _, way := range []struct {
			name, inside string
			opt          cudnnx.Options
			reps         int
		}{{rebuilt, rebuiltIn, cudnnx.Options{NoCache: true}, 5}, {lookup, "", cudnnx.Options{}, 20}} {
			for range way.reps {
				start := time.Now()
				rep, err := g.Plan(env.Dev, bind, way.opt)
				if err != nil {
					return nil, err
				}
				times[way.name] = append(times[way.name], time.Since(start))
				if way.inside != "" {
					times[way.inside] = append(times[way.inside], rep.BuildTime)
				}
			}
		}
		for range 20 {
			start := time.Now()
			if _, _, err := env.Dev.MemInfo(); err != nil {
				return nil, err
			}
			times[roundTrip] = append(times[roundTrip], time.Since(start))
		}
		var out []lessons.Result
		for _, name := range []string{loadCUDNN, firstBuild, firstInside, rebuilt, rebuiltIn, lookup, roundTrip} {
			out = append(out, env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: name, Size: conv.Label(benchShape),
				Dims: benchShape, DType: "float16"}.WithTimes(gpu.Summarize(times[name]))))
		}
		return out, nil
	})
	if !ok {
		return err
	}
	t := &lessons.Table{
		Headers: []string{"plan for the fused layer", "median (ms)", "min (ms)", "max (ms)", "calls"},
		Right:   []bool{false, true, true, true, true},
		Notes: []string{fmt.Sprintf("host time of each call from this process to the GPU's and back, but the rows timed in the GPU's process; "+
			"a fresh process is a new worker, %d of them · ", freshProcesses) + lessons.ResultSet{Results: rs}.Source()},
	}
	for _, r := range rs {
		t.Rows = append(t.Rows, []string{r.Variant, fmt.Sprintf("%.3f", r.MedianMs), fmt.Sprintf("%.3f", r.MinMs), fmt.Sprintf("%.3f", r.MaxMs), fmt.Sprint(r.Reps)})
	}
	env.PrintTable(t)
	return nil
}

// firstPlan starts a GPU process of its own, where cuDNN is not yet
// loaded and nothing is cached, and times, from here, loading cuDNN with
// its handle (a request that needs them and does nothing else), then the
// first build of the fused layer's plan, and that build inside the
// process. The buffers are allocated, not filled: building a plan reads
// only where the tensors are.
func firstPlan() (load, build, inside time.Duration, err error) {
	w, err := gpu.Open()
	if err != nil {
		return 0, 0, 0, err
	}
	defer w.Close()
	sh := conv.Of(benchShape)
	g, x, wt, b, y := conv.Graph("conv+bias+relu", sh, gpu.FP16, true, true)
	bind := cudnnx.Bind{}
	for t, elems := range map[*cudnnx.Tensor]int{x: sh.N * sh.C * sh.H * sh.W, wt: sh.K * sh.C * 9, b: sh.K, y: sh.N * sh.K * sh.H * sh.W} {
		p, err := w.Alloc(int64(2 * elems))
		if err != nil {
			return 0, 0, 0, err
		}
		defer w.Free(p)
		bind[t] = p
	}
	start := time.Now()
	if err := cudnnx.DropPlans(w); err != nil { // loads cuDNN and creates its handle; there is nothing to drop
		return 0, 0, 0, err
	}
	load = time.Since(start)
	start = time.Now()
	rep, err := g.Plan(w, bind, cudnnx.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	return load, time.Since(start), rep.BuildTime, nil
}
