package hellogpu

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/plots"
)

// The pointer chase: one thread follows a cycle through chaseLine-byte
// lines of a footprint, each load's address the value of the one before.
const (
	chaseLine  = 128     // bytes a load moves on to: one cache line, so no two loads share one
	chaseSteps = 1 << 16 // loads timed in each run
	chaseReps  = 3       // runs a footprint; the median is shown
)

// chaseFootprints are the footprints chased: 4 KiB to 512 MiB, at each
// power of two and halfway (×1.5) between, so that the edges of L1 and L2
// fall between two close points whatever their sizes.
func chaseFootprints() []int {
	var out []int
	for b := 4 << 10; b <= 512<<20; b *= 2 {
		out = append(out, b)
		if b < 512<<20 {
			out = append(out, b+b/2)
		}
	}
	return out
}

// chaseOrder is the order in which the chase visits the lines of a
// footprint of the given number of lines: a random permutation, the same
// one for a footprint in every run (the seed is the footprint).
func chaseOrder(lines int) []uint32 {
	r := rand.New(rand.NewPCG(uint64(lines), 1))
	order := make([]uint32, lines)
	for i, v := range r.Perm(lines) {
		order[i] = uint32(v)
	}
	return order
}

// chaseWarm is how many untimed loads a run makes first: a whole lap of
// the cycle, so that each line was read once and sits in whatever level
// can hold it; none where the footprint is more than twice L2, which
// could hold no more than part of the lap. There, after the L2 flush
// before each run, every timed load is to a line the run has not read.
func chaseWarm(footprint int, l2 int64) int {
	if int64(footprint) > 2*l2 {
		return 0
	}
	return footprint / chaseLine
}

// chaseDetail is what a footprint's result keeps beside its times, as
// JSON in its Detail.
type chaseDetail struct {
	Loads         int     `json:"loads"`           // timed in each run
	CyclesPerLoad float64 `json:"cycles_per_load"` // the median run's SM clock cycles over Loads
	Warm          int     `json:"warm"`            // untimed loads before the timed ones
	L2Bytes       int64   `json:"l2_bytes"`        // the GPU's L2
}

// latency times one load from wherever a footprint lives, footprint by
// footprint, and shows the time per load against the footprint: on a GPU,
// what it measures; without one, what was recorded.
func latency(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) { return chaseAll(env, l, step) })
	if !ok {
		return err
	}
	return showChase(env, l, step, rs)
}

// chaseAll chases every footprint that fits in half the free device
// memory, and returns a result for each.
func chaseAll(env *lessons.Env, l *lessons.Lesson, step string) ([]lessons.Result, error) {
	link, err := env.FileKernel("hello.cu", "chase_links")
	if err != nil {
		return nil, err
	}
	chase, err := env.FileKernel("hello.cu", "chase")
	if err != nil {
		return nil, err
	}
	free, _, err := env.Dev.MemInfo()
	if err != nil {
		return nil, err
	}
	var sizes []int
	for _, b := range chaseFootprints() {
		if need := int64(b + b/chaseLine*4); need <= free/2 {
			sizes = append(sizes, b)
		} else {
			fmt.Fprintf(env.Out, "%s is not chased: it needs %d MiB, and %d MiB are free.\n", bytesLabel(lessons.Size{b}), need>>20, free>>20)
		}
	}
	if len(sizes) == 0 {
		return nil, nil
	}
	next, err := env.Dev.Alloc(int64(slices.Max(sizes)))
	if err != nil {
		return nil, err
	}
	out, err := env.Dev.Alloc(3 * 8)
	if err != nil {
		env.FreeAll(next)
		return nil, err
	}
	defer env.FreeAll(next, out)
	var rs []lessons.Result
	for i, b := range sizes {
		if env.Progress != nil {
			env.Progress(i, len(sizes), "pointer chase "+bytesLabel(lessons.Size{b}))
		}
		r, err := chaseOne(env, l, step, link, chase, next, out, b)
		if err != nil {
			return rs, fmt.Errorf("pointer chase over %s: %w", bytesLabel(lessons.Size{b}), err)
		}
		rs = append(rs, env.Record(r))
	}
	if env.Progress != nil {
		env.Progress(len(sizes), len(sizes), "")
	}
	return rs, nil
}

// chaseOne lays the cycle of a footprint of b bytes out in next and
// chases it chaseReps times, each a run of its own, reading the run's
// nanoseconds and cycles from out.
func chaseOne(env *lessons.Env, l *lessons.Lesson, step string, link, chase gpu.Kernel, next, out gpu.DevicePtr, b int) (lessons.Result, error) {
	lines := b / chaseLine
	order := chaseOrder(lines)
	ord, err := gpu.Upload(env.Dev, order)
	if err != nil {
		return lessons.Result{}, err
	}
	defer env.FreeAll(ord)
	if err := env.Dev.Run(gpu.Launch{Kernel: link, Grid: gpu.Dim(gpu.Blocks(lines, 256)), Block: gpu.Dim(256),
		Args: []gpu.Arg{gpu.Ptr(next), gpu.Ptr(ord), gpu.Int32(int32(lines))}}); err != nil {
		return lessons.Result{}, err
	}
	info := env.Dev.Info()
	warm := chaseWarm(b, info.L2Bytes)
	run := gpu.Launch{Kernel: chase, Grid: gpu.Dim(1), Block: gpu.Dim(1),
		Args: []gpu.Arg{gpu.Ptr(next), gpu.Uint32(order[0] * chaseLine / 4), gpu.Int32(int32(warm)), gpu.Int32(chaseSteps), gpu.Ptr(out)}}
	var times []time.Duration
	var cycles []float64
	var cond gpu.Conditions
	for range chaseReps {
		// A Bench of one repetition, for the GPU's clocks while it ran;
		// the kernel times itself. L2 is flushed first: without a lap of
		// its own, a run would find the lines the run before it read.
		t, err := env.Dev.Bench(gpu.Bench{Name: "chase " + bytesLabel(lessons.Size{b}), Ops: [][]gpu.Op{{run}}, Warmup: -1, Reps: 1, FlushL2: true})
		if err != nil {
			return lessons.Result{}, err
		}
		cond = cond.Merge(t.Conditions)
		got, err := gpu.Download[int64](env.Dev, out, 3)
		if err != nil {
			return lessons.Result{}, err
		}
		if got[0] <= 0 || got[1] <= 0 {
			return lessons.Result{}, fmt.Errorf("the chase timed itself at %d ns and %d cycles", got[0], got[1])
		}
		times, cycles = append(times, time.Duration(got[0])), append(cycles, float64(got[1]))
	}
	st := gpu.Summarize(times)
	slices.Sort(cycles)
	detail, err := json.Marshal(chaseDetail{Loads: chaseSteps, CyclesPerLoad: cycles[len(cycles)/2] / chaseSteps, Warm: warm, L2Bytes: info.L2Bytes})
	if err != nil {
		return lessons.Result{}, err
	}
	r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: "pointer chase", Size: bytesLabel(lessons.Size{b}),
		Dims: []int{b}, DType: "uint32", Unit: "ns per load", Throughput: float64(st.Median) / chaseSteps,
		Detail: string(detail), Passed: true, Conditions: &cond}.WithTimes(st)
	return r, nil
}

// showChase shows the chase's results rs: a row a footprint, and the time
// per load against the footprint.
func showChase(env *lessons.Env, l *lessons.Lesson, step string, rs []lessons.Result) error {
	t := &lessons.Table{Headers: []string{"footprint", fmt.Sprintf("ns per load, median of %d runs", rs[0].Reps), "min–max", "SM cycles per load"},
		Right: []bool{true, true, true, true}}
	fig := plots.Lines{Title: "Time per dependent load, one thread, " + rs[0].GPU, Subtitle: lessons.ResultSet{Results: rs}.Source(),
		XLabel: "footprint (bytes)", YLabel: "ns per load", LogX: true}
	se := plots.Series{Name: fmt.Sprintf("median of %d runs", rs[0].Reps)}
	var d chaseDetail
	for _, r := range rs {
		if err := json.Unmarshal([]byte(r.Detail), &d); err != nil {
			return fmt.Errorf("pointer chase over %s: its result cannot be read: %w", r.Size, err)
		}
		perLoad := 1e6 / float64(d.Loads) // ns per load of a run's ms
		t.Rows = append(t.Rows, []string{r.Size, fmt.Sprintf("%.1f", r.Throughput),
			fmt.Sprintf("%.1f–%.1f", r.MinMs*perLoad, r.MaxMs*perLoad), fmt.Sprintf("%.0f", d.CyclesPerLoad)})
		se.X, se.Y = append(se.X, float64(r.Dims[0])), append(se.Y, r.Throughput)
	}
	t.Notes = append(t.Notes,
		fmt.Sprintf("One thread, %d dependent loads a run, each to a %d-byte line picked at random from the footprint; L2 flushed before each run, then a lap of the footprint, untimed, where it is at most twice L2 (%.0f MiB on the %s).",
			d.Loads, chaseLine, float64(d.L2Bytes)/(1<<20), rs[0].GPU),
		"Timed inside the kernel: ns by the GPU's global timer, cycles by the SM's clock.", env.About(rs))
	env.PrintTable(t)
	fig.Series = []plots.Series{se}
	return env.Figure(l, step, fig)
}
