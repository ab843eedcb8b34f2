package launches

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// rounds is how many interleaved rounds a figure of this lesson is the
// median of: launch costs drift with the host's state, so one round
// proves little.
const rounds = 20

// figure is one measured quantity of a Run step: its median over the
// rounds, with the 10th and 90th percentiles.
type figure struct {
	what    string
	samples []time.Duration
	extra   int64        // device memory held, for allocation figures
	dims    lessons.Size // the chain's size {N, n}, for chain figures
}

// record turns f into a Result of step, times per unit (a launch, a step),
// in milliseconds: median, and min/max holding the 10th and 90th
// percentiles.
func (f figure) record(env *lessons.Env, l *lessons.Lesson, step, size string) lessons.Result {
	st := gpu.Summarize(f.samples)
	r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: f.what, Size: size, Dims: f.dims,
		MedianMs: ms(st.Median), MinMs: ms(st.P10), MaxMs: ms(st.P90), Reps: st.N, ExtraMem: f.extra}
	return env.Record(r)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// showFigures prints results of a Run step as a table of microseconds,
// with their spread.
func showFigures(env *lessons.Env, rs []lessons.Result, unit string, memory bool, notes ...string) {
	t := &lessons.Table{Headers: []string{"", "size", unit + " (median, µs)", "10–90 %", "rounds"}, Right: []bool{false, false, true, true, true}}
	if memory {
		t.Headers = append(t.Headers, "held between steps")
		t.Right = append(t.Right, true)
	}
	for _, r := range rs {
		row := []string{r.Variant, r.Size, fmt.Sprintf("%.2f", 1000*r.MedianMs), fmt.Sprintf("%.2f–%.2f", 1000*r.MinMs, 1000*r.MaxMs), fmt.Sprint(r.Reps)}
		if memory {
			row = append(row, mib(r.ExtraMem))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(notes, env.About(rs))
	env.PrintTable(t)
}

func mib(b int64) string {
	if b == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
}

// The launch-cost measurement: enqueued launches (fewer than the stream's
// queue holds, so the host never waits for the GPU), and launches each
// followed by a synchronisation.
const (
	enqueued    = 200
	synchronous = 50
)

// launchCost times the empty kernel: the host's time to enqueue a launch,
// the GPU's time per kernel back to back (from a graph, since launches
// one by one come slower than the GPU runs them), and a launch with a wait
// for it, each the median of interleaved rounds.
func launchCost(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		k, err := env.FileKernel(kernelFile, "empty")
		if err != nil {
			return nil, err
		}
		launch := gpu.Launch{Kernel: k, Grid: gpu.Dim(1), Block: gpu.Dim(32)}
		batch := slices.Repeat([]gpu.Op{launch}, enqueued)
		waited := slices.Repeat([]gpu.Op{launch, gpu.Sync{}}, synchronous)
		// Launched one by one, the kernels run as fast as the host enqueues
		// them; replayed from a graph, as fast as the GPU can start them.
		g, err := env.Dev.Capture(batch...)
		if err != nil {
			return nil, err
		}
		defer env.Dev.FreeGraph(g)
		host := figure{what: "enqueue a launch (host)"}
		dev := figure{what: "run an empty kernel (GPU, from a graph)"}
		wait := figure{what: "launch and synchronise (host)"}
		for range rounds {
			t, err := env.Dev.Bench(gpu.Bench{Name: "empty launches", Ops: [][]gpu.Op{batch}, HostWall: true, Reps: 5})
			if err != nil {
				return nil, err
			}
			host.samples = append(host.samples, t.HostStats().Median/enqueued)
			t, err = env.Dev.Bench(gpu.Bench{Name: "empty kernels from a graph", Ops: [][]gpu.Op{{gpu.GraphOp{Graph: g}}}, Reps: 5})
			if err != nil {
				return nil, err
			}
			dev.samples = append(dev.samples, t.Stats().Median/enqueued)
			t, err = env.Dev.Bench(gpu.Bench{Name: "synchronised launches", Ops: [][]gpu.Op{waited}, HostWall: true, Reps: 3})
			if err != nil {
				return nil, err
			}
			wait.samples = append(wait.samples, t.HostStats().Median/synchronous)
		}
		var out []lessons.Result
		for _, f := range []figure{host, dev, wait} {
			out = append(out, f.record(env, l, step, "empty kernel, 1 × 32 threads"))
		}
		return out, nil
	})
	if !ok {
		return err
	}
	showFigures(env, rs, "per launch", false,
		fmt.Sprintf("Medians of %d interleaved rounds: %d launches a round enqueued, the same %d replayed from a graph, %d launched and waited for.",
			rounds, enqueued, enqueued, synchronous))
	return nil
}

// hostChains are the chains the host-clock step times: the sweep's.
var hostChains = []int{1, 3, 10, 30, 100, 300, 1000}

// The host-clock step's figures at each N: the chain launched one by one,
// timed by the GPU's events around it, by the host while it enqueues, and
// by the host until a synchronisation after it returns; replayed from a
// graph until the synchronisation returns; and what building the graph
// took the host.
const (
	launchedEvents  = "launched, between the GPU's events"
	launchedEnqueue = "launched, host: enqueue"
	launchedEnd     = "launched, host: to the end"
	graphEnd        = "graph, host: to the end"
	graphBuild      = "graph, host: capture and instantiate"
)

// hostClock times chains of N chain_step kernels on the host's clock as
// well as the GPU's: a program that waits for a chain sees the host's.
func hostClock(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		k, err := env.FileKernel(kernelFile, "chain_step")
		if err != nil {
			return nil, err
		}
		var out []lessons.Result
		for _, links := range hostChains {
			rs, err := hostClockAt(env, l, step, k, links)
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
	showHostClock(env, rs)
	return nil
}

// hostClockAt measures the host-clock step's figures for a chain of links
// kernels, each the median of interleaved rounds, per kernel but for the
// graph's build, which is the whole graph's.
func hostClockAt(env *lessons.Env, l *lessons.Lesson, step string, k gpu.Kernel, links int) ([]lessons.Result, error) {
	cs, err := setupChain(env, lessons.Size{links, chainElems})
	if err != nil {
		return nil, err
	}
	c := cs.(*ccase)
	defer c.Free()
	launched := c.launches(k, 256, chainA, chainB)
	g, err := env.Dev.Capture(launched...)
	if err != nil {
		return nil, err
	}
	c.graphs = append(c.graphs, g)
	replay := []gpu.Op{gpu.GraphOp{Graph: g}}
	// Both ways are checked to compute the chain before they are timed.
	for _, ops := range [][]gpu.Op{launched, replay} {
		if err := c.Poison(); err != nil {
			return nil, err
		}
		if err := env.Dev.Run(ops...); err != nil {
			return nil, err
		}
		if _, err := checkChain(env, c.buf, c.x, links, chainA, chainB); err != nil {
			return nil, err
		}
	}
	// The host's clock runs from the first launch until cuStreamSynchronize
	// returns: the Sync is enqueued, and so timed, with the launches.
	waited := append(slices.Clone(launched), gpu.Sync{})
	replayed := append(slices.Clone(replay), gpu.Sync{})
	size := lessons.Size{links, chainElems}
	fs := []*figure{{what: launchedEvents}, {what: launchedEnqueue}, {what: launchedEnd}, {what: graphEnd}, {what: graphBuild}}
	events, enqueue, end, gend, build := fs[0], fs[1], fs[2], fs[3], fs[4]
	per := time.Duration(links)
	for range rounds {
		t, err := env.Dev.Bench(gpu.Bench{Name: "chain launched", Ops: [][]gpu.Op{launched}, HostWall: true, Reps: 5})
		if err != nil {
			return nil, err
		}
		events.samples = append(events.samples, t.Stats().Median/per)
		enqueue.samples = append(enqueue.samples, t.HostStats().Median/per)
		if t, err = env.Dev.Bench(gpu.Bench{Name: "chain launched and waited for", Ops: [][]gpu.Op{waited}, HostWall: true, Reps: 5}); err != nil {
			return nil, err
		}
		end.samples = append(end.samples, t.HostStats().Median/per)
		if t, err = env.Dev.Bench(gpu.Bench{Name: "graph replayed and waited for", Ops: [][]gpu.Op{replayed}, HostWall: true, Reps: 5}); err != nil {
			return nil, err
		}
		gend.samples = append(gend.samples, t.HostStats().Median/per)
		b, err := env.Dev.Capture(launched...)
		if err != nil {
			return nil, err
		}
		build.samples = append(build.samples, b.Built)
		if err := env.Dev.FreeGraph(b); err != nil {
			return nil, err
		}
	}
	var out []lessons.Result
	for _, f := range fs {
		f.dims = size
		out = append(out, f.record(env, l, step, fmt.Sprintf("N=%d, n=%d", links, chainElems)))
	}
	return out, nil
}

// showHostClock prints the host-clock step's results as two tables, one
// row per chain: launched one by one, then replayed from a graph, with
// how many replays pay back the graph's build.
func showHostClock(env *lessons.Env, rs []lessons.Result) {
	var order []string
	by := map[string]map[string]lessons.Result{}
	for _, r := range rs {
		if by[r.Size] == nil {
			by[r.Size] = map[string]lessons.Result{}
			order = append(order, r.Size)
		}
		by[r.Size][r.Variant] = r
	}
	us := func(r lessons.Result, ok bool) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf("%.2f", 1000*r.MedianMs)
	}
	launched := &lessons.Table{Headers: []string{"chain", "GPU's events (µs a kernel)", "host: enqueue (µs a kernel)", "host: to the end (µs a kernel)"},
		Right: []bool{false, true, true, true}}
	graphs := &lessons.Table{Headers: []string{"chain", "host: to the end (µs a kernel)", "capture and instantiate (µs)", "replays to repay it"},
		Right: []bool{false, true, true, true}}
	for _, size := range order {
		row := by[size]
		cell := func(v string) string { r, ok := row[v]; return us(r, ok) }
		launched.Rows = append(launched.Rows, []string{size, cell(launchedEvents), cell(launchedEnqueue), cell(launchedEnd)})
		repay := "—"
		if n, ok := repays(row); ok {
			repay = fmt.Sprint(n)
		}
		graphs.Rows = append(graphs.Rows, []string{size, cell(graphEnd), cell(graphBuild), repay})
	}
	launched.Notes = []string{"Launched one by one. To the end: from the first launch until cuStreamSynchronize returns."}
	graphs.Notes = []string{"Replayed from a graph, one cuGraphLaunch and a synchronisation. Replays to repay it: the build divided by what one replay saves the host against launching the chain one by one, both to the end.",
		fmt.Sprintf("Medians of %d interleaved rounds; %s", rounds, env.About(rs))}
	env.PrintTable(launched)
	env.PrintTable(graphs)
}

// repays is how many replays of a graph save the host what capturing and
// instantiating it cost: the build over what one replay saves against
// launching the chain one by one, both waited for, rounded up. ok is false
// where the figures are missing or a replay saves nothing.
func repays(row map[string]lessons.Result) (n int, ok bool) {
	end, ok1 := row[launchedEnd]
	gend, ok2 := row[graphEnd]
	build, ok3 := row[graphBuild]
	if !ok1 || !ok2 || !ok3 || len(end.Dims) == 0 {
		return 0, false
	}
	saved := float64(end.Dims[0]) * (end.MedianMs - gend.MedianMs)
	if saved <= 0 {
		return 0, false
	}
	return int(math.Ceil(build.MedianMs / saved)), true
}

// updateLinks is the chain the update step captures.
const updateLinks = 100

// update captures a chain of 100 links, then changes its coefficients by
// updating the instantiated graph in place, checking that the replay
// computes the new chain, and times capture and instantiate, capture and
// update, and a replay.
func update(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		cs, err := setupChain(env, lessons.Size{updateLinks, chainElems})
		if err != nil {
			return nil, err
		}
		c := cs.(*ccase)
		defer c.Free()
		k, err := env.FileKernel(kernelFile, "chain_step")
		if err != nil {
			return nil, err
		}
		build := figure{what: "capture and instantiate"}
		upd := figure{what: "capture and update in place"}
		replay := figure{what: "replay the graph"}
		for round := range rounds {
			g, err := env.Dev.Capture(c.launches(k, 256, chainA, chainB)...)
			if err != nil {
				return nil, err
			}
			c.graphs = append(c.graphs, g)
			build.samples = append(build.samples, g.Built)
			// The same chain with y = x + 1 at each link: x + 100 at the end.
			g, err = env.Dev.Update(g, c.launches(k, 256, 1, 1)...)
			if err != nil {
				return nil, err
			}
			upd.samples = append(upd.samples, g.Built)
			if round == 0 {
				if err := c.Poison(); err != nil {
					return nil, err
				}
				if err := env.Dev.Run(gpu.GraphOp{Graph: g}); err != nil {
					return nil, err
				}
				if _, err := checkChain(env, c.buf, c.x, updateLinks, 1, 1); err != nil {
					return nil, fmt.Errorf("the updated graph does not compute the updated chain: %w", err)
				}
			}
			t, err := env.Dev.Bench(gpu.Bench{Name: "graph replay", Ops: [][]gpu.Op{{gpu.GraphOp{Graph: g}}}, Reps: 5})
			if err != nil {
				return nil, err
			}
			replay.samples = append(replay.samples, t.Stats().Median)
		}
		var out []lessons.Result
		for _, f := range []figure{build, upd, replay} {
			out = append(out, f.record(env, l, step, fmt.Sprintf("%d kernels", updateLinks)))
		}
		return out, nil
	})
	if !ok {
		return err
	}
	showFigures(env, rs, "time", false,
		"The update changed every kernel's coefficients; the updated graph was checked to compute the new chain.",
		"Capture and update times are the host's, in the process that owns the GPU; the replay's is the GPU's, between its events.")
	return nil
}

// freedUnderGraph captures a chain, frees the buffer its first kernel reads,
// allocates another of the same size, and replays the graph: cudarepl
// refuses, where CUDA would run the kernels on whatever lives at the old
// address now. Without a GPU it shows what was recorded.
func freedUnderGraph(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		what, err := replayFreed(env)
		if err != nil {
			return nil, err
		}
		return []lessons.Result{env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench",
			Variant: "replay a graph whose input was freed", Size: "3 kernels", Dims: []int{3, chainElems}, Detail: what})}, nil
	})
	if !ok {
		return err
	}
	for _, r := range rs {
		fmt.Fprintf(env.Out, "%s\n", r.Detail)
	}
	fmt.Fprintf(env.Out, "(%s)\n", env.About(rs))
	return nil
}

// replayFreed does what freedUnderGraph shows, and says what happened in
// two lines: where x was and is, and the refusal.
func replayFreed(env *lessons.Env) (string, error) {
	cs, err := setupChain(env, lessons.Size{3, chainElems})
	if err != nil {
		return "", err
	}
	c := cs.(*ccase)
	defer c.Free()
	k, err := env.FileKernel(kernelFile, "chain_step")
	if err != nil {
		return "", err
	}
	g, err := env.Dev.Capture(c.launches(k, 256, chainA, chainB)...)
	if err != nil {
		return "", err
	}
	c.graphs = append(c.graphs, g)
	old := c.in
	if err := env.Dev.Free(c.in); err != nil {
		return "", err
	}
	if c.in, err = env.Dev.Alloc(4 * int64(c.n)); err != nil {
		c.in = 0
		return "", err
	}
	err = env.Dev.Run(gpu.GraphOp{Graph: g})
	if err == nil {
		return "", errors.New("launch-and-graphs: the graph replayed on freed memory without an error")
	}
	return fmt.Sprintf("Captured 3 kernels reading x at %#x; freed x; allocated %d bytes again, at %#x.\nReplaying it: %v",
		uint64(old), 4*c.n, uint64(c.in), err), nil
}

// The allocation step: a training step's temporaries, four of them.
const temporaries = 4

// allocation runs a step that needs four temporaries (scale_into fills
// each, accumulate adds it into y) with the temporaries preallocated,
// allocated and freed with cuMemAlloc each step, or taken from the
// stream-ordered pool, which either gives its memory back at each
// synchronisation or keeps it.
func allocation(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		var out []lessons.Result
		for _, n := range []int{1 << 12, 1 << 20} {
			rs, err := allocateAt(env, l, step, n)
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
	showFigures(env, rs, "per step", true,
		fmt.Sprintf("A step fills %d temporaries of n floats and adds them into y; each way was checked to compute y = 10·x.", temporaries),
		"held between steps: what the temporaries keep allocated while no step runs (the pool's reserve, for the pool).")
	return nil
}

// The ways to get a step's temporaries.
const (
	prealloc   = "preallocated once"
	perStep    = "cuMemAlloc and cuMemFree each step"
	poolGiven  = "pool, memory given back (threshold 0)"
	poolKept   = "pool, memory kept (threshold ∞)"
	keepNone   = 0
	keepAll    = math.MaxInt64
	stepsTimed = 20
)

// allocateAt measures the four ways at n floats a temporary.
func allocateAt(env *lessons.Env, l *lessons.Lesson, step string, n int) ([]lessons.Result, error) {
	x0 := integers(n, uint64(n))
	scale, err := env.FileKernel(kernelFile, "scale_into")
	if err != nil {
		return nil, err
	}
	acc, err := env.FileKernel(kernelFile, "accumulate")
	if err != nil {
		return nil, err
	}
	x, err := gpu.Upload(env.Dev, x0)
	if err != nil {
		return nil, err
	}
	defer env.Dev.Free(x)
	y, err := env.Dev.Alloc(4 * int64(n))
	if err != nil {
		return nil, err
	}
	defer env.Dev.Free(y)
	tmps := make([]gpu.DevicePtr, temporaries)
	for i := range tmps {
		if tmps[i], err = env.Dev.Alloc(4 * int64(n)); err != nil {
			env.FreeAll(tmps...)
			return nil, err
		}
	}
	defer env.FreeAll(tmps...)
	defer env.Dev.MemPool(keepNone) // the driver's default again

	grid, block := gpu.Dim(gpu.Blocks(n, 256)), gpu.Dim(256)
	// ops is one step, its temporaries given by tmp(i), with alloc and
	// free ops around each if set.
	ops := func(tmp func(i int) gpu.Arg, alloc func(i int) []gpu.Op, free func(i int) []gpu.Op) []gpu.Op {
		out := []gpu.Op{gpu.Memset{Dst: y, Count: int64(n)}}
		for i := range temporaries {
			if alloc != nil {
				out = append(out, alloc(i)...)
			}
			out = append(out,
				gpu.Launch{Kernel: scale, Grid: grid, Block: block, Args: []gpu.Arg{gpu.Ptr(x), tmp(i), gpu.Int32(int32(n)), gpu.Float32(float32(i + 1))}},
				gpu.Launch{Kernel: acc, Grid: grid, Block: block, Args: []gpu.Arg{gpu.Ptr(y), tmp(i), gpu.Int32(int32(n))}})
			if free != nil {
				out = append(out, free(i)...)
			}
		}
		return out
	}
	bytes := 4 * int64(n)
	slotted := func(pool bool) []gpu.Op {
		return ops(gpu.SlotPtr,
			func(i int) []gpu.Op { return []gpu.Op{gpu.AllocSlot{Slot: i, Bytes: bytes, Pool: pool}} },
			func(i int) []gpu.Op { return []gpu.Op{gpu.FreeSlot{Slot: i, Pool: pool}} })
	}
	ways := []struct {
		name string
		ops  []gpu.Op
		keep int64 // the pool's release threshold to set first; -1 to leave it
	}{
		{prealloc, ops(func(i int) gpu.Arg { return gpu.Ptr(tmps[i]) }, nil, nil), -1},
		{perStep, slotted(false), -1},
		{poolGiven, slotted(true), keepNone},
		{poolKept, slotted(true), keepAll},
	}
	want := make([]float64, n)
	for i, v := range x0 {
		want[i] = float64(v) * temporaries * (temporaries + 1) / 2
	}
	size := fmt.Sprintf("n=%d (%s a temporary)", n, mib(bytes))
	var out []lessons.Result
	for _, w := range ways {
		if w.keep >= 0 {
			if _, err := env.Dev.MemPool(w.keep); err != nil {
				return out, err
			}
		}
		if err := env.Dev.Run(w.ops...); err != nil {
			return out, fmt.Errorf("%s: %w", w.name, err)
		}
		got, err := gpu.Download[float32](env.Dev, y, n)
		if err != nil {
			return out, err
		}
		if _, err := numeric.Compare("y", got, want, []int{n}, numeric.TolFP32); err != nil {
			return out, fmt.Errorf("%s: %w", w.name, err)
		}
		t, err := env.Dev.Bench(gpu.Bench{Name: w.name, Ops: [][]gpu.Op{w.ops}, Reps: stepsTimed})
		if err != nil {
			return out, fmt.Errorf("%s: %w", w.name, err)
		}
		f := figure{what: w.name, samples: t.Device}
		switch w.name {
		case prealloc:
			f.extra = temporaries * bytes
		case perStep: // it holds nothing between steps
		default:
			pool, err := env.Dev.MemPool(-1)
			if err != nil {
				return out, err
			}
			f.extra = pool.Reserved
		}
		out = append(out, f.record(env, l, step, size))
	}
	return out, nil
}
