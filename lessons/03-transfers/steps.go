package transfers

import (
	"fmt"
	"strings"
	"time"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/plots"
)

// link shows the PCIe link between the host and the GPU, the ceiling every
// copy of this lesson is drawn against.
func link(env *lessons.Env, l *lessons.Lesson, step string) error {
	info, source, ok := env.Device(l, step)
	if !ok {
		fmt.Fprintln(env.Out, "No GPU here, and none was recorded with the lesson: its link is unknown.")
		return nil
	}
	if source == "live" {
		source = "live on " + info.Name // else it names the GPU already: "replayed from …"
	}
	fmt.Fprintf(env.Out, "At %s: %s (%s).\n", info.PCIAddress, info.PCIe, source)
	if !info.PCIe.Known() {
		fmt.Fprintln(env.Out, "This system does not report the link in /sys/bus/pci: the copies are drawn without its nominal rate.")
		return nil
	}
	fmt.Fprintf(env.Out, "Nominal rate each way: %d lanes × %.1f GT/s × 128/130 (the line code) ÷ 8 bits = %.1f GB/s.\n",
		info.PCIe.MaxWidth, info.PCIe.MaxGTs, info.PCIe.GBs())
	fmt.Fprintf(env.Out, "Against %.0f GB/s from the GPU's own memory: the link is %.0f× slower.\n",
		info.PeakBandwidth()/1e9, info.PeakBandwidth()/(info.PCIe.GBs()*1e9))
	fmt.Fprintf(env.Out, "Copy engines (CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT): %d. Copies run on them; kernels run on the SMs and need none.\n",
		info.AsyncEngines)
	return nil
}

// pinSizes are the sizes pinning is timed at.
var pinSizes = []int64{1 << 20, 16 << 20, 256 << 20, 1 << 30}

// pinning times allocating and freeing pinned host memory against pageable
// memory, by size: the median of 5 rounds, each as the host sees it
// (including one round trip to cudarepl's GPU worker, well under a
// millisecond).
func pinning(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		var out []lessons.Result
		for _, b := range pinSizes {
			var pin, unpin, page []time.Duration
			for range 5 {
				t0 := time.Now()
				h, err := env.Dev.AllocHost(b, true)
				if err != nil {
					return out, err
				}
				t1 := time.Now()
				if err := env.Dev.FreeHost(h); err != nil {
					return out, err
				}
				t2 := time.Now()
				if h, err = env.Dev.AllocHost(b, false); err != nil {
					return out, err
				}
				page = append(page, time.Since(t2))
				if err := env.Dev.FreeHost(h); err != nil {
					return out, err
				}
				pin, unpin = append(pin, t1.Sub(t0)), append(unpin, t2.Sub(t1))
			}
			for _, f := range []struct {
				what string
				d    []time.Duration
			}{{"allocate pinned (cuMemHostAlloc)", pin}, {"free pinned (cuMemFreeHost)", unpin}, {"allocate pageable", page}} {
				r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: f.what, Size: bytesLabel(b), Dims: []int{int(b)}}
				out = append(out, env.Record(r.WithTimes(gpu.Summarize(f.d))))
			}
		}
		return out, nil
	})
	if !ok {
		return err
	}
	t := &lessons.Table{Headers: []string{"", "size", "median (ms)", "min–max (ms)", "GB/s"}, Right: []bool{false, true, true, true, true}}
	for _, r := range rs {
		gbs := "—"
		if len(r.Dims) == 1 && r.MedianMs > 0 && strings.Contains(r.Variant, "pinned") {
			gbs = fmt.Sprintf("%.1f", float64(r.Dims[0])/(r.MedianMs/1e3)/1e9)
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.Size, fmt.Sprintf("%.3f", r.MedianMs), fmt.Sprintf("%.3f–%.3f", r.MinMs, r.MaxMs), gbs})
	}
	t.Notes = append(t.Notes, "Medians of 5 rounds, as the host sees them. Pageable memory is only reserved until first touched; pinning touches and locks every page.",
		env.About(rs))
	env.PrintTable(t)
	return nil
}

// timelineStreams are the pipelines the timeline draws, beside the serial one.
var timelineStreams = []int{2, 4}

// timeline runs the serial pipeline and the chunked one on 2 and 4
// streams with CUDA events around every copy and kernel, and draws when
// each ran: a row per stream.
func timeline(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) {
		var out []lessons.Result
		for _, streams := range append([]int{0}, timelineStreams...) {
			err := onPipeline(env, max(1, streams), func(c *pcase, k gpu.Kernel) error {
				ops, name := c.serial(k), "serial"
				if streams > 0 {
					ops, name = c.chunked(k, true), streamsLabel(streams)
				}
				rs, err := spansOf(env, l, step, name, streams > 0, ops)
				for _, r := range rs {
					out = append(out, env.Record(r))
				}
				return err
			})
			if err != nil {
				return out, err
			}
		}
		return out, nil
	})
	if !ok {
		return err
	}
	return drawTimeline(env, l, step, fmt.Sprintf("Copy in, compute, copy out: 2²⁶ floats in %d chunks", pipeChunks), rs)
}

// onPipeline sets up the pipeline over 2²⁶ floats on the given number of
// streams and calls f with it and the work kernel.
func onPipeline(env *lessons.Env, streams int, f func(c *pcase, k gpu.Kernel) error) error {
	k, err := env.FileKernel(kernelFile, "work")
	if err != nil {
		return err
	}
	cs, err := setupPipeline(env, lessons.Size{pipeN, streams})
	if err != nil {
		return err
	}
	defer cs.Free()
	return f(cs.(*pcase), k)
}

// drawTimeline shows when each timeline of rs ended, and draws them.
func drawTimeline(env *lessons.Env, l *lessons.Lesson, step, title string, rs []lessons.Result) error {
	printEnds(env, rs)
	fig := timelineFigure(title, rs)
	fig.Subtitle = lessons.ResultSet{Results: rs}.Source()
	return env.Figure(l, step, fig)
}

// spansOf runs ops once to warm them (their streams and events made,
// their pages touched), then once more with CUDA events around each copy
// and kernel, and returns a result a span: in lane name, or "name: stream
// N" where byStream.
func spansOf(env *lessons.Env, l *lessons.Lesson, step, name string, byStream bool, ops []gpu.Op) ([]lessons.Result, error) {
	if err := env.Dev.Run(ops...); err != nil {
		return nil, err
	}
	spans, err := env.Dev.Timeline(ops...)
	if err != nil {
		return nil, err
	}
	var out []lessons.Result
	for i, sp := range spans {
		kind := spanKind(sp.Op)
		if kind == "" {
			continue // the events that order the streams
		}
		lane := name
		if byStream {
			lane = fmt.Sprintf("%s: stream %d", name, sp.Stream)
		}
		// A result a span: its op's place in the run keeps results of one
		// lane and kind apart, and Detail holds the kind.
		out = append(out, lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: lane, Size: fmt.Sprintf("op %d", i),
			Detail: kind, MinMs: float64(sp.Start) / 1e6, MaxMs: float64(sp.End) / 1e6, MedianMs: float64(sp.End-sp.Start) / 1e6})
	}
	return out, nil
}

// printEnds shows when each timeline's last span ended.
func printEnds(env *lessons.Env, rs []lessons.Result) {
	t := &lessons.Table{Headers: []string{"", "ends at (ms)"}, Right: []bool{false, true}}
	ends := map[string]float64{}
	var order []string
	for _, r := range rs {
		name, _, _ := strings.Cut(r.Variant, ":")
		if _, seen := ends[name]; !seen {
			order = append(order, name)
		}
		ends[name] = max(ends[name], r.MaxMs)
	}
	for _, name := range order {
		t.Rows = append(t.Rows, []string{name, fmt.Sprintf("%.2f", ends[name])})
	}
	t.Notes = append(t.Notes, env.About(rs))
	env.PrintTable(t)
}

// showSchedule draws the learner's schedule as a timeline beside the
// course's pipeline on 4 streams, each run once after a warm-up.
func showSchedule(env *lessons.Env, l *lessons.Lesson, sc *schedule) error {
	// One pipeline serves both: the two runs need the same data.
	var rs []lessons.Result
	err := onPipeline(env, 4, func(c *pcase, k gpu.Kernel) error {
		yours, err := spansOf(env, l, "Exercise", "yours", true, c.scheduled(k, sc))
		if err != nil {
			return err
		}
		course, err := spansOf(env, l, "Exercise", "course, 4 streams", true, c.chunked(k, true))
		rs = append(yours, course...)
		return err
	})
	if err != nil {
		return err
	}
	for i := range rs {
		rs[i] = env.Record(rs[i])
	}
	return drawTimeline(env, l, "Exercise", "Your schedule beside the course's pipeline: 2²⁶ floats", rs)
}

// spanKind names a timeline op for the figure: "" for what is no work.
func spanKind(op string) string {
	switch {
	case strings.HasPrefix(op, "copy host→device"):
		return "copy in"
	case strings.HasPrefix(op, "copy device→host"):
		return "copy out"
	case op == "work":
		return "compute"
	}
	return ""
}

// timelineFigure draws the spans, a lane a stream.
func timelineFigure(title string, rs []lessons.Result) plots.Timeline {
	fig := plots.Timeline{Title: title, XLabel: "time (ms)"}
	lane := map[string]int{}
	for _, r := range rs {
		i, ok := lane[r.Variant]
		if !ok {
			i = len(fig.Lanes)
			lane[r.Variant] = i
			fig.Lanes = append(fig.Lanes, r.Variant)
		}
		fig.Spans = append(fig.Spans, plots.Span{Lane: i, Kind: r.Detail, Start: r.MinMs, End: r.MaxMs})
	}
	return fig
}

// tooEarly runs the pipeline without its last step, the device's stream
// waiting for the others' events, and reads y at once; then makes the
// device's stream wait for the streams, as the whole pipeline does, and
// reads y again. It shows how long each of the four took as the host saw
// it, and what each read's check found: live, or as recorded.
func tooEarly(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) { return race(env, l, step) })
	if !ok {
		return err
	}
	return showEarly(env, rs)
}

// race is tooEarly's measurement, a result for each of its four parts.
func race(env *lessons.Env, l *lessons.Lesson, step string) ([]lessons.Result, error) {
	var out []lessons.Result
	err := onPipeline(env, 4, func(c *pcase, k gpu.Kernel) error {
		c.impl = pipelined
		if err := c.Poison(); err != nil {
			return err
		}
		add := func(what string, t0 time.Time, checked error) {
			r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: what, Size: fmt.Sprintf("n=%d, 4 streams", c.n),
				Dims: []int{c.n, 4}, DType: "float32", MedianMs: float64(time.Since(t0).Microseconds()) / 1e3, Passed: checked == nil}
			if checked != nil {
				r.Detail = checked.Error()
			}
			out = append(out, env.Record(r))
		}
		t0 := time.Now()
		if err := env.Dev.Run(c.chunked(k, false)...); err != nil {
			return err
		}
		add(enqueued, t0, nil)
		t0 = time.Now()
		_, early := c.Check()
		add(readEarly, t0, early)
		// Wait for what the streams were given, as the joined pipeline
		// does at its end: nothing is run again.
		t0 = time.Now()
		if err := env.Dev.Run(c.join()...); err != nil {
			return err
		}
		add(waited, t0, nil)
		t0 = time.Now()
		_, late := c.Check()
		add(readLate, t0, late)
		return nil
	})
	return out, err
}

// showEarly shows tooEarly's results rs: how long each part took, and
// what each read of y found. It fails where y was wrong after the wait.
func showEarly(env *lessons.Env, rs []lessons.Result) error {
	t := &lessons.Table{Headers: []string{"", "as the host saw it (ms)", "y"}, Right: []bool{false, true, false}}
	for _, r := range rs {
		found := "—"
		switch {
		case r.Variant != readEarly && r.Variant != readLate:
		case r.Passed:
			found = "passes the check"
		default:
			found = r.Detail
		}
		t.Rows = append(t.Rows, []string{r.Variant, fmt.Sprintf("%.3f", r.MedianMs), found})
	}
	t.Notes = append(t.Notes, fmt.Sprintf("2²⁶ floats in %d chunks on 4 streams; a read is cudarepl's worker reading y back and checking it.", pipeChunks),
		env.About(rs))
	env.PrintTable(t)
	for _, r := range rs {
		if r.Variant == readLate && !r.Passed {
			return fmt.Errorf("after waiting for the streams: %s", r.Detail)
		}
	}
	return nil
}

// What tooEarly times, in order.
const (
	enqueued  = "pipeline enqueued, no final wait"
	readEarly = "y read at once"
	waited    = "device's stream waits for the streams"
	readLate  = "y read after the wait"
)
