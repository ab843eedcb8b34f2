package precision

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/plots"
)

// The sustained run: one FP16 product of sustainSize, sustainGroup at a
// time back to back, for about sustainFor. A repetition of 16 is 17.6
// TFLOP of work, 18 ms at NVIDIA's 989.4 TFLOP/s and longer at any rate a
// GPU holds: the host's turn between two repetitions (a synchronisation
// and the next enqueue, tens of microseconds) leaves the GPU idle a
// fraction of a percent of the time, and the trace keeps a rate for about
// every NVML reading (one each 50 ms).
const (
	sustainGroup = 16
	// sustainFor is how long the run would take at the rate of a GPU at
	// rest, from which its repetitions are counted: under sustained load
	// the clock falls, and the run takes longer.
	sustainFor = 10 * time.Second
	// sustainRest is how long the GPU rests between the three repetitions
	// that set the run's length and the run, so that the trace begins
	// with a GPU at rest.
	sustainRest = time.Second
)

var sustainSize = lessons.Size{8192, 8192, 8192}

// sustained runs the FP16 product for about ten seconds and shows the SM
// clock, the board power and the rate over time, against the peaks they
// are held to: on a GPU, what it measures; without one, what was
// recorded.
func sustained(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		r, err := runSustained(env, l, step)
		if err != nil {
			return nil, err
		}
		return []lessons.Result{env.Record(r)}, nil
	})
	if !ok {
		return err
	}
	info, _, known := env.Device(l, step)
	return showSustained(env, l, step, rs, refsOf(info, known))
}

// showSustained shows the sustained run rs[0] against ref: a table of
// its last half, and its figures.
func showSustained(env *lessons.Env, l *lessons.Lesson, step string, rs []lessons.Result, ref refs) error {
	r, source := rs[0], lessons.ResultSet{Results: rs}.Source()
	if r.Trace == nil || len(r.Trace.Reps) == 0 {
		return fmt.Errorf("%s: the result recorded has no trace", step)
	}
	fmt.Fprintf(env.Out, "cuBLAS FP16 GEMM %s, %d at a time back to back for %.1f s, %s · %s\n",
		r.Size, r.Trace.OpsPerRep, r.Trace.End()/1e3, r.GPU, source)
	t := sustainedTable(r, ref)
	t.Notes = append(t.Notes, env.About(rs))
	env.PrintTable(t)
	for _, f := range sustainedFigures(r, ref) {
		f.fig.Subtitle = source
		if err := env.Figure(l, step+" "+f.name, f.fig); err != nil {
			return err
		}
	}
	return nil
}

// runSustained sets up the product, counts how many repetitions fill
// sustainFor at the rate of three, lets the GPU rest, and runs them with
// a trace.
func runSustained(env *lessons.Env, l *lessons.Lesson, step string) (lessons.Result, error) {
	c, err := env.Setup(l.Problem, sustainSize)
	if err != nil {
		return lessons.Result{}, err
	}
	defer c.Free()
	op, err := c.Ops(lessons.Impl{Name: "fp16"}, gpu.Kernel{}, 0)
	if err != nil {
		return lessons.Result{}, err
	}
	ops := [][]gpu.Op{slices.Repeat(op, sustainGroup)}
	name := fmt.Sprintf("fp16 GEMM %s ×%d", sustainSize, sustainGroup)
	first, err := env.Dev.Bench(gpu.Bench{Name: name, Ops: ops, Warmup: 1, Reps: 3})
	if err != nil {
		return lessons.Result{}, err
	}
	reps := int(sustainFor/max(first.Stats().Median, time.Millisecond)) + 1
	time.Sleep(sustainRest)
	t, err := env.Dev.Bench(gpu.Bench{Name: name + ", sustained", Ops: ops, Warmup: -1, Reps: reps, Trace: true,
		Progress: func(done, total int) {
			if env.Progress != nil {
				env.Progress(done, total, name)
			}
		}})
	if err != nil {
		return lessons.Result{}, err
	}
	return sustainedResult(l, step, t), nil
}

// sustainedResult is t as the step's result: the times of one product
// (its repetition's over sustainGroup), the median rate of the last half,
// the conditions and the trace.
func sustainedResult(l *lessons.Lesson, step string, t gpu.Timing) lessons.Result {
	per := make([]time.Duration, len(t.Device))
	for i, d := range t.Device {
		per[i] = d / sustainGroup
	}
	r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: "fp16", Size: sustainSize.String(), Dims: sustainSize,
		DType: "fp16", Unit: "TFLOP/s", Conditions: &t.Conditions, Trace: t.Trace}.WithTimes(gpu.Summarize(per))
	r.Reps *= sustainGroup
	r.Throughput = heldOf(r).tflops
	return r
}

// refs are the FP16 rates and clocks a run is held against: the GPU's
// peak at any clock, from its description and the table of peaks, and
// NVIDIA's figure for it.
type refs struct {
	sms       int
	perClock  float64 // FP16 FLOP per SM per clock; 0 where unknown
	maxMHz    float64 // the highest SM clock
	datasheet float64 // NVIDIA's figure, TFLOP/s; 0 where the lesson does not know the GPU
}

// refsOf reads refs from info (known false: no description, no peaks).
func refsOf(info gpu.DeviceInfo, known bool) refs {
	var ref refs
	if !known {
		return ref
	}
	if per, ok := info.PerSMClock(gpu.PeakFP16); ok {
		ref.sms, ref.maxMHz, ref.perClock = info.SMs, float64(info.ClockKHz)/1e3, per
	}
	if rate, _, ok := info.Datasheet(gpu.PeakFP16); ok {
		ref.datasheet = rate / 1e12
	}
	return ref
}

// at is the FP16 peak at an SM clock of mhz, in TFLOP/s.
func (r refs) at(mhz float64) float64 { return float64(r.sms) * mhz * 1e6 * r.perClock / 1e12 }

// datasheetMHz is the SM clock NVIDIA's figure implies.
func (r refs) datasheetMHz() float64 {
	return r.datasheet * 1e12 / (float64(r.sms) * r.perClock) / 1e6
}

// held is what a run's trace says over its last half, where the clock
// has settled: medians of the SM clock, the board power and the rate.
type held struct {
	from, end             float64 // ms since the run began
	clockMHz, powerW      float64 // 0 without readings
	tflops                float64
	readings, repetitions int
}

// heldOf sums up the last half of r's trace.
func heldOf(r lessons.Result) held {
	tr := *r.Trace
	h := held{end: tr.End(), from: tr.End() / 2}
	last := tr.From(h.from)
	var clock, power, rate []float64
	for _, s := range last.Samples {
		clock, power = append(clock, float64(s.SMClockMHz)), append(power, s.PowerW)
	}
	for _, rep := range last.Reps {
		rate = append(rate, repTFLOPs(r, rep))
	}
	h.clockMHz, h.powerW, h.tflops = midpoint(clock), midpoint(power), midpoint(rate)
	h.readings, h.repetitions = len(clock), len(rate)
	return h
}

// repTFLOPs is the rate a repetition of r ran at.
func repTFLOPs(r lessons.Result, rep gpu.TraceRep) float64 {
	return lessons.MatmulFLOPs(r.Dims) * float64(r.Trace.OpsPerRep) / (rep.DeviceMs / 1e3) / 1e12
}

// midpoint is the median of v, the mean of the two middle values for an
// even count (lessons.RatioOf takes the lower one, a round that ran); 0
// for none.
func midpoint(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// sustainedTable sets the rate achieved over the last half beside the
// peak at the clock held, at the maximum clock, and NVIDIA's figure.
func sustainedTable(r lessons.Result, ref refs) *lessons.Table {
	h := heldOf(r)
	t := &lessons.Table{Headers: []string{"FP16, dense", "SM clock (MHz)", "TFLOP/s", "achieved, % of it"}, Right: []bool{false, true, true, true}}
	row := func(what string, mhz, tflops float64) {
		t.Rows = append(t.Rows, []string{what, fmt.Sprintf("%.0f", mhz), fmt.Sprintf("%.1f", tflops), fmt.Sprintf("%.1f %%", 100*h.tflops/tflops)})
	}
	if ref.perClock > 0 {
		row("peak at the maximum clock", ref.maxMHz, ref.at(ref.maxMHz))
		if ref.datasheet > 0 {
			row("NVIDIA's figure", ref.datasheetMHz(), ref.datasheet)
		}
		if h.readings > 0 {
			row("peak at the clock held (median)", h.clockMHz, ref.at(h.clockMHz))
		}
		t.Notes = append(t.Notes, fmt.Sprintf("Peak = %d SMs × SM clock × %.0f FLOP per SM per clock (%s).", ref.sms, ref.perClock, lessons.PeakTable))
	}
	t.Rows = append(t.Rows, []string{"achieved by cuBLAS (median)", "—", fmt.Sprintf("%.1f", h.tflops), "—"})
	t.Notes = append(t.Notes, fmt.Sprintf("Medians over the last half of the run, %.1f–%.1f s: %d readings of the clock, %d repetitions of %d products.",
		h.from/1e3, h.end/1e3, h.readings, h.repetitions, r.Trace.OpsPerRep), conditionsNote(r, h))
	return t
}

// conditionsNote says what the board drew over the last half, and how
// hot it got and why NVML said the clocks were held over the whole run.
func conditionsNote(r lessons.Result, h held) string {
	c := r.Conditions
	if h.readings == 0 || c == nil {
		return "NVML gave no readings: the clock held and the power drawn are unknown."
	}
	why := "NVML named no reason for holding the clocks"
	if len(c.Throttle) > 0 {
		why = "clocks held by: " + strings.Join(c.Throttle, ", ")
	}
	return fmt.Sprintf("Board power over the last half: median %.0f W of a %.0f W limit. Over the whole run: up to %d °C; %s.",
		h.powerW, c.PowerLimitW, c.TempC, why)
}

// namedFigure is a figure and what its file is named after, beside the
// step.
type namedFigure struct {
	name string
	fig  plots.Lines
}

// sustainedFigures draws r's trace: the SM clock and the board power,
// where NVML gave readings, and the rate, each against what bounds it.
func sustainedFigures(r lessons.Result, ref refs) []namedFigure {
	what := fmt.Sprintf("a sustained FP16 GEMM (%s), %s", r.Size, r.GPU)
	var figs []namedFigure
	if len(r.Trace.Samples) > 0 {
		figs = append(figs, clockFigures(r, ref, what)...)
	}
	return append(figs, namedFigure{"rate", rateFigure(r, ref, what)})
}

// timeAxis is the x axis of every figure of the step.
const timeAxis = "time since the first launch (s)"

// clockFigures draws the SM clock against the maximum and the clock of
// NVIDIA's figure, and the board power against its limit.
func clockFigures(r lessons.Result, ref refs, what string) []namedFigure {
	var t, mhz, watts []float64
	for _, s := range r.Trace.Samples {
		t, mhz, watts = append(t, s.Ms/1e3), append(mhz, float64(s.SMClockMHz)), append(watts, s.PowerW)
	}
	clock := plots.Lines{Title: "SM clock under " + what, XLabel: timeAxis, YLabel: "SM clock (MHz)",
		Series: []plots.Series{{Name: "SM clock, read through NVML", X: t, Y: mhz, Dense: true}}}
	if ref.perClock > 0 {
		clock.Ceilings = append(clock.Ceilings, plots.Ceiling{Name: fmt.Sprintf("maximum SM clock, %.0f MHz", ref.maxMHz), Value: ref.maxMHz, Peak: true})
		if ref.datasheet > 0 {
			clock.Ceilings = append(clock.Ceilings, plots.Ceiling{
				Name: fmt.Sprintf("the clock of NVIDIA's %.1f TFLOP/s, %.0f MHz", ref.datasheet, ref.datasheetMHz()), Value: ref.datasheetMHz()})
		}
	}
	power := plots.Lines{Title: "Board power under " + what, XLabel: timeAxis, YLabel: "power (W)",
		Series: []plots.Series{{Name: "board power, read through NVML", X: t, Y: watts, Dense: true}}}
	if c := r.Conditions; c != nil && c.PowerLimitW > 0 {
		power.Ceilings = []plots.Ceiling{{Name: fmt.Sprintf("power limit, %.0f W", c.PowerLimitW), Value: c.PowerLimitW, Peak: true}}
	}
	return []namedFigure{{"clock", clock}, {"power", power}}
}

// rateFigure draws the rate of each repetition, at its middle, beside the
// peak at each clock read, against the peak at the maximum clock and
// NVIDIA's figure.
func rateFigure(r lessons.Result, ref refs, what string) plots.Lines {
	achieved := plots.Series{Name: fmt.Sprintf("achieved, each repetition of %d products", r.Trace.OpsPerRep), Dense: true}
	for _, rep := range r.Trace.Reps {
		achieved.X = append(achieved.X, (rep.EndMs-rep.DeviceMs/2)/1e3)
		achieved.Y = append(achieved.Y, repTFLOPs(r, rep))
	}
	fig := plots.Lines{Title: "FP16 rate under " + what, XLabel: timeAxis, YLabel: "TFLOP/s", Series: []plots.Series{achieved}}
	if ref.perClock == 0 {
		return fig
	}
	if len(r.Trace.Samples) > 0 {
		atClock := plots.Series{Name: fmt.Sprintf("peak at the SM clock read: %d SMs × clock × %.0f FLOP", ref.sms, ref.perClock), Dense: true}
		for _, s := range r.Trace.Samples {
			atClock.X, atClock.Y = append(atClock.X, s.Ms/1e3), append(atClock.Y, ref.at(float64(s.SMClockMHz)))
		}
		fig.Series = append(fig.Series, atClock)
	}
	fig.Ceilings = append(fig.Ceilings, plots.Ceiling{Name: fmt.Sprintf("peak at the maximum clock, %.1f TFLOP/s", ref.at(ref.maxMHz)), Value: ref.at(ref.maxMHz), Peak: true})
	if ref.datasheet > 0 {
		fig.Ceilings = append(fig.Ceilings, plots.Ceiling{Name: fmt.Sprintf("NVIDIA's figure, %.1f TFLOP/s", ref.datasheet), Value: ref.datasheet})
	}
	return fig
}
