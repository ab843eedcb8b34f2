package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cudarepl/gpu"
	"cudarepl/numeric"
)

func TestRatioOf(t *testing.T) {
	tp := func(v float64, rounds ...float64) Result { return Result{Throughput: v, Rounds: rounds} }
	for _, tt := range []struct {
		desc    string
		r, base Result
		want    Ratio
		text    string
	}{
		{"measured once: the ratio of the throughputs", tp(47), tp(50), Ratio{0.94, 0.94, 0.94, 1}, "0.94"},
		{"three rounds: the median of the rounds' ratios", tp(46, 46, 48, 45), tp(50, 50, 48, 50), Ratio{0.92, 0.9, 1, 3}, "0.92 (0.90–1.00)"},
		// The medians, 46 and 50, would say 0.92; but the kernel dipped in
		// the round where the baseline did, and matched it in two of three.
		{"a GPU that slows in one round slows both", tp(46, 50, 46, 40), tp(50, 50, 50, 40), Ratio{1, 0.92, 1, 3}, "1.00 (0.92–1.00)"},
		{"four rounds: the lower middle ratio", tp(0, 1, 2, 3, 4), tp(0, 1, 1, 1, 1), Ratio{2, 1, 4, 4}, "2.00 (1.00–4.00)"},
		{"rounds paired as far as the shorter goes", tp(0, 10, 20, 30), tp(0, 10, 10), Ratio{1, 1, 2, 2}, "1.00 (1.00–2.00)"},
		{"a baseline without rounds (recorded earlier)", tp(45, 46, 48, 45), tp(50), Ratio{0.9, 0.9, 0.9, 1}, "0.90"},
		{"one round: no range", tp(45, 45), tp(50, 50), Ratio{0.9, 0.9, 0.9, 1}, "0.90"},
		{"no baseline", tp(45), Result{}, Ratio{}, "—"},
	} {
		got := RatioOf(tt.r, tt.base)
		if got != tt.want || got.String() != tt.text {
			t.Errorf("%s: RatioOf(%v, %v) = %+v %q; want %+v %q", tt.desc, tt.r.Rounds, tt.base.Rounds, got, got, tt.want, tt.text)
		}
	}
	if got := RatioOf(tp(0, 47, 46, 48), tp(0, 50, 50, 50)).Times(100).Text("%.1f"); got != "94.0 (92.0–96.0)" {
		t.Errorf("as a percentage: %q, want %q", got, "94.0 (92.0–96.0)")
	}
}

// roundsDev is a fakeDev that keeps the name of every bench in order and
// times each from times: the next of its durations, 1 ms past the end.
type roundsDev struct {
	fakeDev
	order []string
	times map[string][]time.Duration
}

func (d *roundsDev) Bench(b gpu.Bench) (gpu.Timing, error) {
	d.order = append(d.order, b.Name)
	t, _ := d.fakeDev.Bench(b)
	if ts := d.times[b.Name]; len(ts) > 0 {
		t.Device, d.times[b.Name] = ts[:1], ts[1:]
	}
	return t, nil
}

// countingCase counts the checks of the cases a problem sets up.
type countingCase struct {
	fakeCase
	checks *int
}

func (c countingCase) Check() (numeric.CheckStats, error) {
	*c.checks++
	return numeric.CheckStats{}, nil
}

// TestSweepRounds: in rounds, a sweep measures every point once a round,
// in turn, and the copy before each round's first point; every point
// keeps one result, the median round's, with each round's throughput and
// ceiling, and is checked in the first round only. A ladder measures in 3
// rounds unless the view says otherwise; another sweep in 1, as before.
func TestSweepRounds(t *testing.T) {
	ms := func(d ...float64) []time.Duration {
		var out []time.Duration
		for _, x := range d {
			out = append(out, time.Duration(x*float64(time.Millisecond)))
		}
		return out
	}
	for _, tt := range []struct {
		desc   string
		sweep  Sweep
		view   int // View.Rounds
		order  string
		rounds string // the first point's Rounds and CeilingRounds, its throughput and ceiling
		checks int
		setups int // a point's case is kept from round to round, unless the sweep draws memory
	}{
		{desc: "one round: as a sweep always measured", sweep: Sweep{},
			order: "copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000", rounds: "[] [] 12 2", checks: 8, setups: 4},
		{desc: "a ladder: three rounds", sweep: Sweep{Ladder: true},
			order:  "copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000|copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000|copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000",
			rounds: "[12 6 3] [2 1 4] 6 2", checks: 8, setups: 4},
		{desc: "a ladder that draws memory: set up every round", sweep: Sweep{Ladder: true, Memory: true},
			order:  "copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000|copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000|copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000",
			rounds: "[12 6 3] [2 1 4] 6 2", checks: 8, setups: 12},
		{desc: "the view's rounds over the sweep's", sweep: Sweep{Ladder: true, Rounds: 5}, view: 2,
			order:  "copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000|copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000",
			rounds: "[12 6] [2 1] 6 1", checks: 8, setups: 4},
		{desc: "the sweep's rounds", sweep: Sweep{Rounds: 2},
			order:  "copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000|copy|k1 n=1000000|k1 n=2000000|k2 n=1000000|k2 n=2000000",
			rounds: "[12 6] [2 1] 6 1", checks: 8, setups: 4},
	} {
		checks := 0
		var out bytes.Buffer
		// k1 at 10⁶ (12 MB) runs at 12, 6, then 3 GB/s; the copy (twice
		// 256 MiB) at 2, 1, then 4 GB/s.
		d := &roundsDev{times: map[string][]time.Duration{"k1 n=1000000": ms(1, 2, 4), "device-to-device copy": ms(268.435456, 536.870912, 134.217728)}}
		env := liveEnv(d, View{Out: &out, Rounds: tt.view})
		p := fakeProblem()
		setups := 0
		p.Setup = func(*Env, Size) (Case, error) { setups++; return countingCase{checks: &checks}, nil }
		l := &Lesson{Slug: "fake", Problem: p}
		sw := tt.sweep
		sw.Title, sw.Sizes, sw.XLabel = "Fake", []Size{{1e6}, {2e6}}, "n"
		if err := sw.Do(env, l, "Benchmark"); err != nil {
			t.Errorf("%s: Do = %v", tt.desc, err)
		}
		var order []string
		for _, n := range d.order {
			if n == "device-to-device copy" {
				n = "copy"
			}
			order = append(order, n)
		}
		if got := strings.Join(order, "|"); got != tt.order {
			t.Errorf("%s: measured\n  %s\nwant\n  %s", tt.desc, got, tt.order)
		}
		rs := env.Results.Filter("Benchmark", "bench")
		if len(rs) != 4 {
			t.Fatalf("%s: %d results, want one a point (4)", tt.desc, len(rs))
		}
		r := rs[0]
		if got := fmt.Sprintf("%.3g %.3g %.3g %.3g", r.Rounds, r.CeilingRounds, r.Throughput, r.Ceiling); got != tt.rounds {
			t.Errorf("%s: k1 at 10⁶: rounds, ceiling rounds, throughput and ceiling = %s, want %s", tt.desc, got, tt.rounds)
		}
		if checks != tt.checks {
			t.Errorf("%s: %d checks, want %d (before and after timing, in the first round)", tt.desc, checks, tt.checks)
		}
		if setups != tt.setups {
			t.Errorf("%s: %d setups, want %d", tt.desc, setups, tt.setups)
		}
	}
}

// failDev is a roundsDev whose benches fail as err says (nil: they run).
type failDev struct {
	roundsDev
	err func(bench int) error
}

func (d *failDev) Bench(b gpu.Bench) (gpu.Timing, error) {
	t, _ := d.roundsDev.Bench(b)
	return t, d.err(len(d.order))
}

// TestSweepRoundFails: a point that fails in a later round is the
// failure, and the later points of its impl keep the rounds they have;
// a point that does not fit in a later round keeps its earlier rounds.
func TestSweepRoundFails(t *testing.T) {
	timeout := &gpu.WorkerError{Op: "run k1", Cause: "ran past the 10s time limit", TimedOut: true}
	oom := &gpu.CUDAError{Call: "cuMemAlloc", Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	d := &failDev{err: func(bench int) error {
		switch bench {
		case 7: // round 2: copy, then k1 at 10⁶
			return timeout
		case 9: // round 2: k2 at 2·10⁶ (k1's is skipped)
			return oom
		}
		return nil
	}}
	var out bytes.Buffer
	env := liveEnv(d, View{Out: &out})
	l := &Lesson{Slug: "fake", Problem: fakeProblem()}
	err := (&Sweep{Title: "Fake", Sizes: []Size{{1e6}, {2e6}}, XLabel: "n", Rounds: 3}).Do(env, l, "Benchmark")
	if !errors.Is(err, timeout) {
		t.Errorf("Do = %v, want the time-out", err)
	}
	var got []string
	for _, r := range env.Results.Filter("Benchmark", "bench") {
		got = append(got, fmt.Sprintf("%s %s %s %d", r.Variant, r.Size, outcomeLabel(r), len(r.Rounds)))
	}
	if want := "k1 n=1000000 timed out 0|k1 n=2000000 ok 1|k2 n=1000000 ok 3|k2 n=2000000 ok 1"; strings.Join(got, "|") != want {
		t.Errorf("recorded %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestBenchTableRounds: against a library, each ratio is the median of
// the rounds' ratios with their range; a result recorded before rounds
// (here at 1024³) reads as it always has.
func TestBenchTableRounds(t *testing.T) {
	p := &Problem{Name: "fp32 matmul", Unit: "TFLOP/s", Baseline: "cuBLAS",
		Impls: []Impl{{Name: "matmul_v5"}, {Name: "matmul_v6"}, {Name: "cuBLAS", Library: true}}}
	// at is v at n³ running at tflops, in rounds where given (tflops is
	// then their median).
	at := func(v string, n int, tflops float64, rounds ...float64) Result {
		flops := 2 * float64(n) * float64(n) * float64(n)
		return Result{Variant: v, Size: Size{n, n, n}.String(), MedianMs: flops / tflops / 1e9, Throughput: tflops, Unit: "TFLOP/s",
			PeakMem: 12 * int64(n) * int64(n), Rounds: rounds, Peak: 66.9, PeakName: "FP32 peak (CUDA cores), 132 SMs × 128 lanes × 2 × 1980 MHz"}
	}
	rs := []Result{
		at("matmul_v5", 1024, 17.2),
		at("cuBLAS", 1024, 34.5),
		at("matmul_v5", 4096, 24.3, 24.3, 24.1, 24.5),
		at("matmul_v6", 4096, 25.9, 25.9, 25.3, 26.2),
		at("cuBLAS", 4096, 50.0, 50.0, 48.1, 51.3),
	}
	var b bytes.Buffer
	benchTable(p, rs).Write(&b)
	golden(t, "tables_rounds.golden", b.Bytes())
}

// TestLadderBarsRounds: a bar is the median of its rounds' ratios to the
// library's, and says so.
func TestLadderBarsRounds(t *testing.T) {
	p := &Problem{Name: "mm", Impls: []Impl{{Name: "v1"}, {Name: "lib", Library: true}}}
	rs := []Result{
		{Variant: "v1", Dims: []int{4096}, Throughput: 46, Rounds: []float64{50, 46, 40}, Unit: "TFLOP/s", GPU: "G", Mode: "live", Date: "d", MedianMs: 1},
		{Variant: "lib", Dims: []int{4096}, Throughput: 50, Rounds: []float64{50, 50, 40}, Unit: "TFLOP/s", MedianMs: 1},
	}
	b, ok := LadderBars(p, rs)
	if !ok || b.Series[0].Values[0] != 100 || !strings.HasSuffix(b.Subtitle, "each bar the median of 3 rounds' ratios") {
		t.Errorf("LadderBars = %v %q, %v; want v1 at 100%% (the median of 100, 92, 100), said in the subtitle", b.Series[0].Values, b.Subtitle, ok)
	}
	// Against the copy, each round's kernel against that round's copy.
	copied := []Result{{Variant: "v1", Dims: []int{4096}, Throughput: 1800, Rounds: []float64{1800, 1900, 1500}, Unit: "GB/s", GPU: "G", MedianMs: 1,
		Ceiling: 2000, CeilingRounds: []float64{2000, 1900, 2000}, CeilingName: "copy"}}
	b, ok = LadderBars(&Problem{Name: "t", Impls: p.Impls[:1]}, copied)
	if !ok || b.Series[0].Values[0] != 90 {
		t.Errorf("LadderBars against the copy = %v, %v; want 90%% (the median of 90, 100, 75)", b.Series[0].Values, ok)
	}
}

// TestSource: a set names each GPU it holds once, with its first date.
func TestSource(t *testing.T) {
	h100 := Result{GPU: "H100", Date: "2026-11-24", Mode: "replayed"}
	h200 := Result{GPU: "H200", Date: "2026-11-28", Mode: "replayed"}
	later := h100
	later.Date = "2026-11-25"
	live := h200
	live.Mode = "live"
	for _, c := range []struct {
		rs   []Result
		want string
	}{
		{nil, "no results"},
		{[]Result{h100, later}, "replayed from H100, 2026-11-24"},
		{[]Result{h100, h200, later}, "replayed from H100, 2026-11-24 and H200, 2026-11-28"},
		{[]Result{live}, "live on H200, 2026-11-28"},
	} {
		if got := (ResultSet{Results: c.rs}).Source(); got != c.want {
			t.Errorf("Source(%v) = %q; want %q", c.rs, got, c.want)
		}
	}
}
