package lessons

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cudarepl/gpu"
	"cudarepl/numeric"
	"cudarepl/plots"
)

// fakeDev is just enough of a gpu.Device for a sweep over a library impl:
// every bench "takes" 1 ms. Methods it lacks panic through the nil embed.
type fakeDev struct {
	gpu.Device
	next    gpu.DevicePtr
	benches int // the SM clock falls by 100 MHz a bench
}

func (f *fakeDev) Info() gpu.DeviceInfo                 { return gpu.DeviceInfo{Name: "Fake GPU", L2Bytes: 1 << 20} }
func (f *fakeDev) MemInfo() (int64, int64, error)       { return 1 << 30, 1 << 30, nil }
func (f *fakeDev) Alloc(n int64) (gpu.DevicePtr, error) { f.next += 1 << 20; return f.next, nil }
func (f *fakeDev) Free(gpu.DevicePtr) error             { return nil }
func (f *fakeDev) Run(...gpu.Op) error                  { return nil }
func (f *fakeDev) Bench(b gpu.Bench) (gpu.Timing, error) {
	f.benches++
	return gpu.Timing{Device: []time.Duration{time.Millisecond},
		Conditions: gpu.Conditions{Samples: 2, SMClockMHz: [2]int{1980 - 100*f.benches, 1980}, MemClockMHz: 2619, PowerW: 400, PowerLimitW: 700, TempC: 50}}, nil
}

// liveEnv is an Env on d, seen through v, as Open gives one on a GPU.
func liveEnv(d gpu.Device, v View) *Env { return &Env{Session: newSession(d, nil), View: v} }

type fakeCase struct{}

func (fakeCase) Ops(Impl, gpu.Kernel, int) ([]gpu.Op, error) { return []gpu.Op{gpu.Memset{}}, nil }
func (fakeCase) Poison() error                               { return nil }
func (fakeCase) Check() (numeric.CheckStats, error)          { return numeric.CheckStats{}, nil }
func (fakeCase) Free()                                       {}

// TestSweepStopsOnCancel: Ctrl-C during a sweep keeps what was measured and
// returns ErrStopped.
func TestSweepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	env := liveEnv(&fakeDev{}, View{Out: &out, Ctx: ctx, Progress: func(done, total int, what string) {
		if done == 1 {
			cancel() // the learner presses Ctrl-C during the second measurement
		}
	}})
	p := &Problem{Name: "fake", DType: "float32", Unit: "GB/s", Ceiling: CeilingCopy,
		Impls:  []Impl{{Name: "lib", Library: true}},
		Setup:  func(*Env, Size) (Case, error) { return fakeCase{}, nil },
		Memory: func(Size) Memory { return Memory{Device: 1 << 20} },
		Work:   func(s Size) float64 { return float64(s[0]) }}
	l := &Lesson{Slug: "fake", Problem: p}
	sw := &Sweep{Title: "Fake", Sizes: []Size{{1e6}, {2e6}, {3e6}}, XLabel: "n"}
	err := sw.Do(env, l, "Benchmark")
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Do = %v, want ErrStopped", err)
	}
	if got := len(env.Results.Filter("Benchmark", "bench")); got != 2 {
		t.Errorf("%d results kept, want 2 (measured before the stop)", got)
	}
	if !strings.Contains(out.String(), "stopped after 2 of 3 measurements") || !strings.Contains(out.String(), "lib      n=2000000") {
		t.Errorf("output:\n%s", out.String())
	}
	// 1e6 bytes in 1 ms is 1 GB/s.
	if r := env.Results.Results[0]; r.Throughput != 1 || r.Ceiling == 0 {
		t.Errorf("first result: %.3g GB/s, ceiling %.3g", r.Throughput, r.Ceiling)
	}
	// Each measurement keeps what the GPU reported while it ran, and the
	// table says it for its points (the copy ceiling is measured first).
	if r := env.Results.Results[1]; r.Conditions == nil || r.Conditions.SMClockMHz != [2]int{1680, 1980} {
		t.Errorf("second result's conditions = %+v, want the SM clock at 1680–1980 MHz", r.Conditions)
	}
	if want := "While it ran: SM clock 1680–1980 MHz, memory 2619 MHz, up to 400 W of 700 W, 50 °C."; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// TestCheckRefusesShapes: an impl that cannot run a size is reported as
// refused, with its reason, and does not fail the check.
func TestCheckRefusesShapes(t *testing.T) {
	var out bytes.Buffer
	env := liveEnv(&fakeDev{}, View{Out: &out})
	p := &Problem{Name: "fake", DType: "float32", Unit: "GB/s", Ceiling: CeilingCopy,
		CheckSizes: []Size{{3}, {4}},
		Impls: []Impl{{Name: "lib", Library: true, Requires: func(s Size) error {
			if s[0]%4 != 0 {
				return errors.New("needs a multiple of 4")
			}
			return nil
		}}},
		Setup:  func(*Env, Size) (Case, error) { return fakeCase{}, nil },
		Memory: func(Size) Memory { return Memory{Device: 1 << 20} },
		Work:   func(s Size) float64 { return float64(s[0]) }}
	l := &Lesson{Slug: "fake", Problem: p}
	if err := (&CheckStep{}).Do(env, l, "Check"); err != nil {
		t.Fatalf("Do = %v, want nil (a refusal is not a failure)", err)
	}
	ok4 := false
	for _, line := range strings.Split(out.String(), "\n") {
		ok4 = ok4 || strings.HasPrefix(line, "lib      n=4") && strings.HasSuffix(line, "  ok")
	}
	refused := false
	for _, line := range strings.Split(out.String(), "\n") {
		refused = refused || strings.HasPrefix(line, "lib      n=3") && strings.HasSuffix(line, "—          —  refused")
	}
	if !refused || !strings.Contains(out.String(), "lib refused at n=3: needs a multiple of 4") || !ok4 {
		t.Errorf("check table:\n%s", out.String())
	}
}

func TestLadderBars(t *testing.T) {
	p := &Problem{Name: "mm", Impls: []Impl{{Name: "v1"}, {Name: "v2"}, {Name: "lib", Library: true}}}
	rs := []Result{
		{Variant: "v2", Dims: []int{4096}, Throughput: 30, Unit: "TFLOP/s", GPU: "G", Mode: "live", Date: "d", MedianMs: 1},
		{Variant: "v1", Dims: []int{4096}, Throughput: 5, Unit: "TFLOP/s", MedianMs: 6},
		{Variant: "v1", Dims: []int{256}, Throughput: 1, Unit: "TFLOP/s", MedianMs: 1},
		{Variant: "lib", Dims: []int{4096}, Throughput: 50, Unit: "TFLOP/s", MedianMs: 0.6},
	}
	b, ok := LadderBars(p, rs)
	if !ok || strings.Join(b.Groups, ",") != "v1,v2" || b.Series[0].Values[0] != 10 || b.Series[0].Values[1] != 60 {
		t.Errorf("LadderBars = %+v, %v; want v1 10%%, v2 60%% in ladder order", b, ok)
	}
	if _, ok := LadderBars(p, rs[:3]); ok {
		t.Error("LadderBars without a library result or a ceiling claims to have bars")
	}
	// No library impl: the ceiling measured beside the kernels is 100%.
	copied := []Result{
		{Variant: "v1", Dims: []int{4096}, Throughput: 500, Unit: "GB/s", GPU: "G", MedianMs: 1, Ceiling: 2000, CeilingName: "copy"},
		{Variant: "v2", Dims: []int{4096}, Throughput: 1800, Unit: "GB/s", GPU: "G", MedianMs: 1, Ceiling: 2000, CeilingName: "copy"},
	}
	b, ok = LadderBars(&Problem{Name: "t", Impls: p.Impls[:2]}, copied)
	if !ok || b.YLabel != "% of copy" || b.Series[0].Values[0] != 25 || b.Series[0].Values[1] != 90 {
		t.Errorf("LadderBars against the copy = %+v, %v; want v1 25%%, v2 90%% of copy", b, ok)
	}
}

// memDev is a device whose allocations fail past a budget and which
// remembers what is still allocated.
type memDev struct {
	fakeDev
	allocs int // how many allocations succeed
	live   map[gpu.DevicePtr]bool
}

func (d *memDev) Alloc(n int64) (gpu.DevicePtr, error) {
	if d.allocs == 0 {
		return 0, errors.New("out of memory")
	}
	d.allocs--
	p, _ := d.fakeDev.Alloc(n)
	d.live[p] = true
	return p, nil
}
func (d *memDev) Free(p gpu.DevicePtr) error        { delete(d.live, p); return nil }
func (d *memDev) Write(gpu.DevicePtr, []byte) error { return nil }

// TestUploadPairFreesOnFailure: whichever of the three allocations fails,
// nothing stays allocated; when none does, all three are there.
func TestUploadPairFreesOnFailure(t *testing.T) {
	a, b := []float32{1, 2}, []float32{3, 4}
	for allocs := 0; allocs <= 3; allocs++ {
		d := &memDev{allocs: allocs, live: map[gpu.DevicePtr]bool{}}
		_, _, _, err := UploadPair(liveEnv(d, View{}), a, b, 8)
		switch {
		case allocs < 3 && (err == nil || len(d.live) != 0):
			t.Errorf("%d allocations allowed: err %v, %d left allocated; want an error and none", allocs, err, len(d.live))
		case allocs == 3 && (err != nil || len(d.live) != 3):
			t.Errorf("3 allocations allowed: err %v, %d allocated; want 3", err, len(d.live))
		}
	}
}

// smallDev is a fakeDev with 1 GiB of free memory whose Run fails as err
// says (nil: it runs).
type smallDev struct {
	fakeDev
	runs int
	err  func(run int) error
}

func (d *smallDev) Run(...gpu.Op) error {
	d.runs++
	if d.err != nil {
		return d.err(d.runs)
	}
	return nil
}

// fakeProblem needs 12 bytes of device memory per element, like a vector add.
func fakeProblem(sizes ...Size) *Problem {
	return &Problem{Name: "fake add", DType: "float32", Unit: "GB/s", Ceiling: CeilingCopy, CheckSizes: sizes,
		Impls:  []Impl{{Name: "k1", Library: true}, {Name: "k2", Library: true}},
		Setup:  func(*Env, Size) (Case, error) { return fakeCase{}, nil },
		Memory: func(s Size) Memory { return Memory{Device: 12 * int64(s[0])} },
		Work:   func(s Size) float64 { return 12 * float64(s[0]) }}
}

// TestTooLargeIsRefused: a size that needs more device memory than is free
// is refused before anything is allocated, with what it needs and what is
// free; a sweep of only such sizes fails, one that reaches them goes on.
func TestTooLargeIsRefused(t *testing.T) {
	var out bytes.Buffer
	d := &smallDev{}
	env := liveEnv(d, View{Out: &out})
	l := &Lesson{Slug: "fake", Problem: fakeProblem()}
	err := (&Sweep{Title: "Fake", Sizes: []Size{{1 << 33}}, XLabel: "n"}).Do(env, l, "Benchmark")
	want := "fake add n=2^33 needs 96.0 GiB of device memory; 1.0 GiB is free"
	if err == nil || err.Error() != want {
		t.Errorf("sweep of one size too large = %v, want %q", err, want)
	}
	if d.runs != 0 || d.next != 0 {
		t.Errorf("%d runs and %d bytes allocated for a refused size, want none", d.runs, d.next)
	}
	if !strings.Contains(out.String(), "out of memory") || !strings.Contains(out.String(), "needs 98304.0") {
		t.Errorf("table of a refused size:\n%s", out.String())
	}

	out.Reset()
	err = (&Sweep{Title: "Fake", Sizes: []Size{{1 << 20}, {1 << 33}}, XLabel: "n"}).Do(env, l, "Benchmark")
	if err != nil {
		t.Errorf("sweep that reaches a size too large = %v, want nil", err)
	}
	measured, oom := 0, 0
	for _, r := range env.Results.Filter("Benchmark", "bench") {
		switch {
		case r.Measured():
			measured++
		case r.Outcome == OutOfMemory && r.NeedMem == 12<<33:
			oom++
		}
	}
	if measured != 2 || oom != 2 {
		t.Errorf("%d measured and %d out of memory, want 2 and 2:\n%s", measured, oom, out.String())
	}
}

// TestTimeOutSkipsTheRest: once a kernel times out, its remaining sizes are
// skipped with the reason and nothing more runs; the next impl is checked.
func TestTimeOutSkipsTheRest(t *testing.T) {
	var out bytes.Buffer
	timeout := &gpu.WorkerError{Op: "run k1", Cause: "ran past the 10s time limit", TimedOut: true}
	d := &smallDev{err: func(run int) error {
		if run == 2 { // the first size of k1 runs, the second hangs
			return timeout
		}
		return nil
	}}
	env := liveEnv(d, View{Out: &out})
	p := fakeProblem(Size{1}, Size{3}, Size{1000}, Size{1023})
	l := &Lesson{Slug: "fake", Problem: p}
	err := (&CheckStep{}).Do(env, l, "Check")
	if !errors.Is(err, timeout) {
		t.Fatalf("Do = %v, want the time-out", err)
	}
	if d.runs != 2+4 {
		t.Errorf("%d runs, want 6: two of k1 (the second timed out), four of k2", d.runs)
	}
	var got []string
	for _, r := range env.Results.Filter("Check", "check") {
		got = append(got, r.Variant+" "+r.Size+" "+outcomeLabel(r))
	}
	want := "k1 n=1 ok|k1 n=3 timed out|k1 n=1000 skipped|k1 n=1023 skipped|k2 n=1 ok|k2 n=3 ok|k2 n=1000 ok|k2 n=1023 ok"
	if strings.Join(got, "|") != want {
		t.Errorf("recorded %q, want %q", strings.Join(got, "|"), want)
	}
	for _, line := range []string{"k1       n=1000               —          —  skipped", "k1 skipped at n=1000, n=1023: after it timed out at n=3"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("check table lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Contains(out.String(), "0e+00") {
		t.Errorf("rows that measured nothing show error figures:\n%s", out.String())
	}
}

// TestSweepFigures: a sweep at one size draws bars, one per impl measured;
// over sizes it draws lines, with the sizes that did not fit as crosses.
func TestSweepFigures(t *testing.T) {
	p := &Problem{Name: "add", Impls: []Impl{{Name: "v1"}, {Name: "lib", Library: true}}}
	at := func(v string, n int, gbs float64) Result {
		return Result{Variant: v, Size: Size{n}.String(), Dims: []int{n}, Throughput: gbs, Unit: "GB/s", MedianMs: 1, GPU: "G"}
	}
	oom := Result{Variant: "v1", Size: "n=8", Dims: []int{8}, Outcome: OutOfMemory, NeedMem: 3 << 20, Unit: "GB/s"}
	sw := &Sweep{Title: "Add"}
	bars, ok := sw.Figure(p, []Result{at("v1", 4, 10), at("lib", 4, 20)}).(plots.Bars)
	if !ok || strings.Join(bars.Groups, ",") != "v1,lib" || bars.Series[0].Values[1] != 20 {
		t.Errorf("one size: %+v, want bars of v1 and lib", bars)
	}
	lines, ok := sw.Figure(p, []Result{at("v1", 4, 10), at("v1", 6, 12), oom}).(plots.Lines)
	if !ok || len(lines.Series) != 1 || len(lines.Series[0].X) != 2 || len(lines.Series[0].OutOfMemory) != 1 || lines.Series[0].OutOfMemory[0].X != 8 {
		t.Errorf("sizes with one out of memory: %+v", lines)
	}
	mem := sw.MemoryFigure(p, []Result{at("v1", 4, 10), oom})
	if o := mem.Series[0].OutOfMemory; len(o) != 1 || o[0].Y != 3 {
		t.Errorf("memory figure marks the size out of memory at %+v, want at its 3 MiB", o)
	}
}

// TestBlockSweepSkipsKeepTheirBlock: in a sweep over block sizes, the
// points skipped after a time-out each keep their block, so the session
// keeps one result per block rather than the last skip alone.
func TestBlockSweepSkipsKeepTheirBlock(t *testing.T) {
	timeout := &gpu.WorkerError{Op: "run vadd_v1", Cause: "ran past the 10s time limit", TimedOut: true}
	d := &smallDev{err: func(run int) error {
		if run == 2 { // the copy ceiling runs, then the first block hangs
			return timeout
		}
		return nil
	}}
	src, err := kernelSource(&Lesson{}, "vector_add.cu")
	if err != nil {
		t.Fatal(err)
	}
	// The kernel is already loaded, as a session that ran it once has it:
	// nothing here needs NVRTC.
	env := liveEnv(d, View{Out: &bytes.Buffer{}})
	env.kernels[src.Name+"\x00vadd_v1\x00"+src.Code] = gpu.Kernel{}
	p := fakeProblem()
	p.Kernels, p.Impls = "vector_add.cu", []Impl{{Name: "vadd_v1"}}
	l := &Lesson{Slug: "fake", Problem: p}
	err = (&Sweep{Title: "Fake", Sizes: []Size{{1 << 20}}, Blocks: []int{64, 128, 256}, XLabel: "threads per block"}).Do(env, l, "Blocks")
	if !errors.Is(err, timeout) {
		t.Fatalf("Do = %v, want the time-out", err)
	}
	var got []string
	for _, r := range env.Results.Filter("Blocks", "bench") {
		got = append(got, fmt.Sprintf("%d %s", r.Block, outcomeLabel(r)))
	}
	if want := "64 timed out|128 skipped|256 skipped"; strings.Join(got, "|") != want {
		t.Errorf("recorded %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestSizeSweepsRouteSizes: sizes a learner names go to the sweeps whose
// sizes have as many numbers, once to sweeps that would measure the same,
// and a size no sweep takes is refused before anything runs.
func TestSizeSweepsRouteSizes(t *testing.T) {
	sweep := func(sizes ...Size) Action { return &Sweep{Title: "Fake", Sizes: sizes, XLabel: "n"} }
	l := &Lesson{Slug: "fake", Problem: fakeProblem(), Steps: []Step{
		{Title: "Small", Action: sweep(Size{1 << 10})},
		{Title: "Large", Action: sweep(Size{1 << 20})}, // measures what Small does
		{Title: "Pairs", Action: sweep(Size{1 << 10, 1})},
	}}
	for _, tc := range []struct {
		sizes []Size
		steps map[string]int // results per step
		err   string
	}{
		{sizes: []Size{{4096}}, steps: map[string]int{"Small": 2}},
		{sizes: []Size{{4096}, {2048, 1}, {8192}}, steps: map[string]int{"Small": 4, "Pairs": 2}},
		{sizes: []Size{{2048, 1}}, steps: map[string]int{"Pairs": 2}},
		{sizes: []Size{{4096}, {1, 2, 3}}, err: "size 1x2x3 has 3 numbers, and fake measures sizes of 1 or 2 numbers, like 2^20 or 1024x1"},
	} {
		var out bytes.Buffer
		env := liveEnv(&smallDev{}, View{Out: &out, Sizes: tc.sizes})
		err := l.sizeSweeps(env)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("sizes %v: err = %v, want %q", tc.sizes, err, tc.err)
			}
			if len(env.Results.Results) != 0 {
				t.Errorf("sizes %v: %d results before the refusal, want none", tc.sizes, len(env.Results.Results))
			}
			continue
		}
		if err != nil {
			t.Errorf("sizes %v: %v", tc.sizes, err)
			continue
		}
		for _, step := range []string{"Small", "Large", "Pairs"} {
			if got := len(env.Results.Filter(step, "bench")); got != tc.steps[step] {
				t.Errorf("sizes %v: %d results in %s, want %d", tc.sizes, got, step, tc.steps[step])
			}
		}
		if len(env.Sizes) != len(tc.sizes) {
			t.Errorf("sizes %v: env.Sizes left as %v", tc.sizes, env.Sizes)
		}
	}
}

// TestFlushes: the L2 is flushed where what a run touches fits in 4× L2,
// which an impl's Footprint decides where the case holds more.
func TestFlushes(t *testing.T) {
	const l2 = 50 << 20
	p := &Problem{Memory: func(s Size) Memory { return Memory{Device: int64(s[0])} }}
	small := func(Size) int64 { return 10 << 20 }
	for _, tc := range []struct {
		name   string
		impl   Impl
		device int
		want   bool
	}{
		{"the case fits", Impl{}, 100 << 20, true},
		{"the case just fits", Impl{}, 4*l2 - 1, true},
		{"the case is 4× L2", Impl{}, 4 * l2, false},
		{"the case is larger, the impl's footprint fits", Impl{Footprint: small}, 1 << 30, true},
		{"the footprint rules both ways", Impl{Footprint: func(Size) int64 { return 1 << 30 }}, 1 << 20, false},
	} {
		if got := flushes(p, tc.impl, Size{tc.device}, l2); got != tc.want {
			t.Errorf("%s: flushes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// archDev is a fakeDev of compute capability major.minor.
type archDev struct {
	fakeDev
	major, minor int
}

func (d *archDev) Info() gpu.DeviceInfo {
	in := d.fakeDev.Info()
	in.Major, in.Minor = d.major, d.minor
	return in
}

// TestMinArch: an impl with a minimum architecture is refused on older
// GPUs only.
func TestMinArch(t *testing.T) {
	impl := Impl{Name: "v6", MinArch: "sm_90"}
	for _, tc := range []struct {
		major, minor int
		refused      bool
	}{{8, 0, true}, {8, 9, true}, {9, 0, false}, {10, 0, false}, {12, 0, false}} {
		env := liveEnv(&archDev{major: tc.major, minor: tc.minor}, View{})
		err := impl.refuses(env, Size{1})
		if (err != nil) != tc.refused {
			t.Errorf("compute capability %d.%d: %v, want refused %v", tc.major, tc.minor, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "needs sm_90 or newer") {
			t.Errorf("compute capability %d.%d: %v, want it to say what it needs", tc.major, tc.minor, err)
		}
	}
	for arch, want := range map[string]int{"sm_90": 90, "sm_90a": 90, "sm_120": 120, "sm_80": 80, "": 0} {
		if got := archNumber(arch); got != want {
			t.Errorf("archNumber(%q) = %d, want %d", arch, got, want)
		}
	}
}
