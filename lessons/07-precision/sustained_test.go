package precision

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
	"cudarepl/plots"
)

const h100 = "NVIDIA H100 80GB HBM3"

// h100Refs is what an H100 SXM's description gives the step.
func h100Refs() refs {
	return refsOf(gpu.DeviceInfo{Name: h100, Major: 9, Minor: 0, SMs: 132, ClockKHz: 1980000}, true)
}

// syntheticRun is a made-up sustained run of 12 s: the clock at 1980 MHz
// for 200 ms, then at 1290, 1300 or 1310 MHz in turn, reading by reading,
// held by the power cap with the board at its 700 W limit; each repetition
// of 16 products at 93 % of the peak at the clock of its end.
func syntheticRun() lessons.Result {
	tr := &gpu.Trace{OpsPerRep: sustainGroup}
	clock := func(ms float64) int {
		if ms < 200 {
			return 1980
		}
		return 1290 + 10*(int(ms/50)%3)
	}
	for ms := 0.0; ms <= 12000; ms += 50 {
		s := gpu.TraceSample{Ms: ms, SMClockMHz: clock(ms), MemClockMHz: 2619, PowerW: min(700, 300+2*ms), TempC: 40 + int(ms/1000)}
		if ms >= 200 {
			s.Throttle = 0x4
		}
		tr.Samples = append(tr.Samples, s)
	}
	work := sustainGroup * lessons.MatmulFLOPs(sustainSize)
	for end := 0.0; end < 12000; {
		dev := work / (0.93 * 132 * float64(clock(end)) * 1e6 * 4096) * 1e3
		end += dev + 0.02
		tr.Reps = append(tr.Reps, gpu.TraceRep{EndMs: end, DeviceMs: dev})
	}
	return lessons.Result{Lesson: "precision", Step: "The clock under load", Kind: "bench", Variant: "fp16", Size: sustainSize.String(),
		Dims: sustainSize, DType: "fp16", Unit: "TFLOP/s", GPU: h100, Date: "2026-11-25", Mode: "replayed", Trace: tr,
		Conditions: &gpu.Conditions{Samples: len(tr.Samples), SMClockMHz: [2]int{1290, 1980}, MemClockMHz: 2619, PowerW: 700, PowerLimitW: 700, TempC: 52,
			Throttle: []string{"power cap"}}}
}

// TestRefs: the H100's FP16 peak is 4096 FLOP per SM per clock, 1070.5
// TFLOP/s at 1980 MHz, and NVIDIA's 989.4 TFLOP/s is its rate at 1830 MHz.
func TestRefs(t *testing.T) {
	ref := h100Refs()
	if ref.perClock != 4096 || ref.maxMHz != 1980 || ref.sms != 132 {
		t.Fatalf("refs = %+v, want 132 SMs, 4096 FLOP per SM per clock, 1980 MHz", ref)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"peak at 1980 MHz", ref.at(1980), 1070.5}, {"clock of 989.4 TFLOP/s", ref.datasheetMHz(), 1830}} {
		if math.Abs(c.got-c.want) > 0.1 {
			t.Errorf("%s = %.2f, want %.1f", c.what, c.got, c.want)
		}
	}
	if other := refsOf(gpu.DeviceInfo{Name: "NVIDIA A100-SXM4-80GB", Major: 8, SMs: 108, ClockKHz: 1410000}, true); other.datasheet != 312 || other.perClock != 2048 {
		t.Errorf("A100 refs = %+v, want 2048 FLOP per SM per clock and NVIDIA's 312 TFLOP/s", other)
	}
	if unknown := refsOf(gpu.DeviceInfo{}, false); unknown.perClock != 0 {
		t.Errorf("refs without a description = %+v, want no peak", unknown)
	}
}

// TestHeld: over the last half the medians are the clock held, the power
// at the limit, and 93 % of the peak at the clock held.
func TestHeld(t *testing.T) {
	r := syntheticRun()
	h := heldOf(r)
	if h.clockMHz != 1300 || h.powerW != 700 || h.readings != 120 || h.from < 6000 || h.end < 12000 {
		t.Errorf("held = %+v, want 1300 MHz, 700 W, 120 readings from 6 s", h)
	}
	if want := 0.93 * h100Refs().at(1300); math.Abs(h.tflops-want) > 0.01*want {
		t.Errorf("held rate %.1f TFLOP/s, want about %.1f", h.tflops, want)
	}
}

// TestSustainedTable: the table sets the rate held against the peaks at
// the maximum clock, at NVIDIA's clock and at the clock held, and says
// what held the clocks; without NVML's readings, only what the trace's
// repetitions give.
func TestSustainedTable(t *testing.T) {
	r := syntheticRun()
	var b bytes.Buffer
	sustainedTable(r, h100Refs()).Write(&b)
	for _, want := range []string{"peak at the maximum clock", "1980", "1070.5", "NVIDIA's figure", "1830", "989.4",
		"peak at the clock held (median)", "1300", "702.9", "93.0 %", "achieved by cuBLAS (median)",
		"132 SMs × SM clock × 4096 FLOP", "6.0–12.0 s", "median 700 W of a 700 W limit", "up to 52 °C; clocks held by: power cap"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	r.Trace.Samples, r.Conditions = nil, nil
	b.Reset()
	sustainedTable(r, h100Refs()).Write(&b)
	if strings.Contains(b.String(), "clock held (median)") || !strings.Contains(b.String(), "NVML gave no readings") {
		t.Errorf("without readings:\n%s", b.String())
	}
}

// TestSustainedFigures: three figures, each titled, with units on both
// axes, its series named and its references drawn, that plot and chart.
func TestSustainedFigures(t *testing.T) {
	figs := sustainedFigures(syntheticRun(), h100Refs())
	want := map[string]struct {
		series, ceilings int
		ylabel           string
	}{"clock": {1, 2, "SM clock (MHz)"}, "power": {1, 1, "power (W)"}, "rate": {2, 2, "TFLOP/s"}}
	if len(figs) != len(want) {
		t.Fatalf("%d figures, want %d", len(figs), len(want))
	}
	for _, f := range figs {
		w := want[f.name]
		if f.fig.Title == "" || f.fig.XLabel != timeAxis || f.fig.YLabel != w.ylabel || len(f.fig.Series) != w.series || len(f.fig.Ceilings) != w.ceilings {
			t.Errorf("%s: %q, x %q, y %q, %d series, %d references; want y %q, %d series, %d references",
				f.name, f.fig.Title, f.fig.XLabel, f.fig.YLabel, len(f.fig.Series), len(f.fig.Ceilings), w.ylabel, w.series, w.ceilings)
		}
		for _, s := range f.fig.Series {
			if s.Name == "" || !s.Dense || len(s.X) < 100 {
				t.Errorf("%s: series %+v, want named, dense and long", f.name, s.Name)
			}
		}
		if _, err := f.fig.Plot(); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
		var chart bytes.Buffer
		if err := plots.Terminal(&chart, f.fig, 80); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
	}
	r := syntheticRun()
	r.Trace.Samples = nil
	if figs := sustainedFigures(r, refs{}); len(figs) != 1 || figs[0].name != "rate" || len(figs[0].fig.Series) != 1 {
		t.Errorf("without readings or peaks: %d figures, want the rate alone", len(figs))
	}
}

// TestShowSustained: the step shows a recorded run as its header, its
// table and three figures saved beside one another.
func TestShowSustained(t *testing.T) {
	l, err := lessons.Find("precision")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	if err := showSustained(env, l, "The clock under load", []lessons.Result{syntheticRun()}, h100Refs()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cuBLAS FP16 GEMM 8192×8192×8192, 16 at a time back to back for 12.0 s, " + h100, "replayed from", "989.4"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, name := range []string{"clock", "power", "rate"} {
		if _, err := os.Stat(filepath.Join(env.PlotDir, "07-precision-the-clock-under-load-"+name+".png")); err != nil {
			t.Errorf("figure %s: %v", name, err)
		}
	}
}

// TestSustainedReplays: without a GPU the step shows the run recorded
// with the lesson, says where it comes from, and holds it against the
// peak at the clock it held and NVIDIA's figure.
func TestSustainedReplays(t *testing.T) {
	l, err := lessons.Find("precision")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sustained(lessontest.ReplayEnv(t, &out), l, "The clock under load"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"replayed from NVIDIA H100 80GB HBM3", "peak at the clock held (median)", "NVIDIA's figure", "power cap"} {
		if !strings.Contains(got, want) {
			t.Errorf("the replayed step lacks %q:\n%s", want, got)
		}
	}
}

// TestSustainedJSON: a run written as a results file reads back whole, as
// replay reads it.
func TestSustainedJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h100.json")
	r := syntheticRun()
	if err := lessons.WriteResults(path, lessons.ResultSet{Results: []lessons.Result{r}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := lessons.ParseResults(b)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Results[0].Trace
	if got == nil || len(got.Samples) != len(r.Trace.Samples) || len(got.Reps) != len(r.Trace.Reps) || got.Samples[10] != r.Trace.Samples[10] ||
		got.Reps[10] != r.Trace.Reps[10] || got.OpsPerRep != sustainGroup {
		t.Errorf("trace read back differs: %+v", got)
	}
	t.Logf("%d readings and %d repetitions take %d bytes", len(r.Trace.Samples), len(r.Trace.Reps), len(b))
}
