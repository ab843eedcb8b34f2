package gpu

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"cudarepl/internal/dl"
)

// Bench describes a measurement. Each repetition enqueues one list of ops
// between two CUDA events; with more than one list, repetition i runs
// Ops[i%len(Ops)], so that inputs rotate through buffers that do not all
// fit in L2.
type Bench struct {
	Name     string // shown in errors and progress, e.g. "vadd n=2^26"
	Ops      [][]Op
	Warmup   int  // untimed repetitions first; 3 when 0, none when negative
	Reps     int  // timed repetitions; 20 when 0
	FlushL2  bool // evict L2 before each repetition, by reading twice its size (not timed)
	HostWall bool // also time, on the host, how long enqueueing each repetition takes
	// Trace keeps every reading of the GPU's conditions, and when each
	// timed repetition ended, in Timing.Trace: for a run long enough that
	// its clocks, and so its rate, change as it goes.
	Trace bool

	// Progress, if set, is called after each repetition, warm-up included,
	// with the number done and the total. It runs in the caller's process.
	Progress func(done, total int)
}

func (b *Bench) defaults() error {
	if len(b.Ops) == 0 {
		return fmt.Errorf("gpu: bench %q: no ops to time", b.Name)
	}
	for i, ops := range b.Ops {
		if len(ops) == 0 {
			return fmt.Errorf("gpu: bench %q: op list %d is empty", b.Name, i)
		}
	}
	if b.Warmup == 0 {
		b.Warmup = 3
	}
	if b.Warmup < 0 {
		b.Warmup = 0
	}
	if b.Reps == 0 {
		b.Reps = 20
	}
	if b.Reps < 0 {
		return fmt.Errorf("gpu: bench %q: %d repetitions", b.Name, b.Reps)
	}
	if b.Name == "" {
		b.Name = describeOps(b.Ops[0])
	}
	return nil
}

// Timing is what Bench measured: one sample per timed repetition.
type Timing struct {
	Name   string
	Device []time.Duration // between the CUDA events around each repetition
	Host   []time.Duration // host wall time to enqueue each repetition (Bench.HostWall)
	// Conditions is what the GPU reported while the repetitions ran; no
	// samples where NVML cannot be read.
	Conditions Conditions
	// Trace is the same over time, with the repetitions' ends, where
	// Bench.Trace asked for it; nil otherwise.
	Trace *Trace
}

// Stats summarizes the device times.
func (t Timing) Stats() Stats { return Summarize(t.Device) }

// HostStats summarizes the host enqueue times.
func (t Timing) HostStats() Stats { return Summarize(t.Host) }

// Stats is a summary of repeated timings.
type Stats struct {
	N                int
	Median, Min, Max time.Duration
	Mean, StdDev     time.Duration
	P10, P90         time.Duration // 10th and 90th percentiles
}

// Summarize computes Stats of samples; the zero Stats for none. Percentiles
// interpolate linearly between the two nearest samples.
func Summarize(samples []time.Duration) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / float64(len(s))
	var ss float64
	for _, v := range s {
		ss += (float64(v) - mean) * (float64(v) - mean)
	}
	std := 0.0
	if len(s) > 1 {
		std = math.Sqrt(ss / float64(len(s)-1))
	}
	return Stats{
		N: len(s), Min: s[0], Max: s[len(s)-1],
		Median: percentile(s, 0.5), P10: percentile(s, 0.1), P90: percentile(s, 0.9),
		Mean: time.Duration(math.Round(mean)), StdDev: time.Duration(math.Round(std)),
	}
}

// percentile of sorted s, q in [0,1].
func percentile(s []time.Duration, q float64) time.Duration {
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	frac := pos - float64(lo)
	return time.Duration(math.Round(float64(s[lo]) + frac*float64(s[hi]-s[lo])))
}

// Spread is (P90−P10)/Median, a unitless measure of how noisy the samples
// are; 0 for none.
func (s Stats) Spread() float64 {
	if s.Median == 0 {
		return 0
	}
	return float64(s.P90-s.P10) / float64(s.Median)
}

// Rate returns work per second at the median time, e.g. bytes/s or FLOP/s
// for work bytes or FLOPs per repetition; 0 when there is no sample.
func (s Stats) Rate(work float64) float64 {
	if s.Median <= 0 {
		return 0
	}
	return work / s.Median.Seconds()
}

func (s Stats) String() string {
	return fmt.Sprintf("median %s (min %s, max %s, n=%d)", fmtDur(s.Median), fmtDur(s.Min), fmtDur(s.Max), s.N)
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f µs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3f s", d.Seconds())
}

// Bench times b on the GPU thread.
func (c *Context) Bench(b Bench) (Timing, error) {
	if err := b.defaults(); err != nil {
		return Timing{}, err
	}
	t := Timing{Name: b.Name}
	err := c.do(func() error {
		var err error
		t, err = c.bench(b)
		return err
	})
	return t, err
}

func (c *Context) bench(b Bench) (t Timing, err error) {
	d := c.d
	t = Timing{Name: b.Name}
	runs := make([]prepared, len(b.Ops))
	for i, ops := range b.Ops {
		p, err := c.prepare(ops)
		if err != nil {
			return t, fmt.Errorf("bench %s: %w", b.Name, err)
		}
		defer p.release()
		runs[i] = p
	}
	var flush func() error
	if b.FlushL2 {
		var err error
		if flush, err = c.l2Flusher(); err != nil {
			return t, err
		}
	}
	var start, end uintptr
	if err := errors.Join(d.check(d.cuEventCreate(&start, 0), "cuEventCreate", ""), d.check(d.cuEventCreate(&end, 0), "cuEventCreate", "")); err != nil {
		return t, err
	}
	defer d.cuEventDestroy(start)
	defer d.cuEventDestroy(end)

	// The repetitions take turns with other processes' on this GPU (a
	// class that shares it): what is above times nothing and does not
	// wait for them, nor do checks, which take no turn.
	total := b.Warmup + b.Reps
	err = c.turns.Timed("bench "+b.Name, c.info.PCIAddress, func() { b.report(0, total) }, func() error {
		sampling := c.sampleConditions(b)
		defer func() { t.Conditions, t.Trace = sampling.finish() }()
		return c.repeat(b, runs, flush, start, end, sampling, &t)
	})
	return t, err
}

// repeat runs b's warm-up and timed repetitions, repetition i running
// runs[i%len(runs)] between the events start and end, after a flush
// where there is one; it adds the times to t and tells sampling when each
// timed one ended. On the GPU thread.
func (c *Context) repeat(b Bench, runs []prepared, flush func() error, start, end uintptr, sampling *sampler, t *Timing) error {
	d := c.d
	total := b.Warmup + b.Reps
	for i := 0; i < total; i++ {
		if flush != nil {
			if err := flush(); err != nil {
				return err
			}
		}
		if err := d.check(d.cuEventRecord(start, c.stream), "cuEventRecord", ""); err != nil {
			return err
		}
		t0 := time.Now()
		err := runs[i%len(runs)].enqueue()
		host := time.Since(t0)
		if err != nil {
			return err
		}
		if err := d.check(d.cuEventRecord(end, c.stream), "cuEventRecord", ""); err != nil {
			return err
		}
		if err := d.check(d.cuEventSynchronize(end), "cuEventSynchronize", "after "+b.Name); err != nil {
			return err
		}
		var ms float32
		if err := d.check(d.cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime", ""); err != nil {
			return err
		}
		if i >= b.Warmup {
			t.Device = append(t.Device, time.Duration(float64(ms)*1e6))
			sampling.ended(t.Device[len(t.Device)-1])
			if b.HostWall {
				t.Host = append(t.Host, host)
			}
		}
		b.report(i+1, total)
	}
	return nil
}

// report tells b.Progress, where there is one, that done of total
// repetitions are done.
func (b *Bench) report(done, total int) {
	if b.Progress != nil {
		b.Progress(done, total)
	}
}

// l2FlushPTX is the flush kernel, l2flush.cu compiled to PTX, which the
// driver compiles for the GPU: Bench needs no NVRTC.
//
//go:embed l2flush.ptx
var l2FlushPTX string

// l2Flush is what flushes L2 between a Bench's repetitions: a buffer of
// twice the L2 size, of zeros, and a kernel that reads it all. Reading, not
// writing: a flush that writes leaves L2 full of dirty lines, whose
// write-back to DRAM is then timed with the next repetition (measured on
// the H100: a stride-1 read of 2²² floats timed 24 % slow). Reading evicts
// what the last repetition left, dirty or not, and writes it back while
// the flush runs, outside the timed window, and leaves only clean lines.
type l2Flush struct {
	buf        DevicePtr
	module, fn uintptr
	args       *params
	grid       Dim3
}

// l2Flusher returns what flushes L2 before a repetition, making it on
// first use.
func (c *Context) l2Flusher() (func() error, error) {
	if c.flush == nil {
		f, err := c.newL2Flush()
		if err != nil {
			return nil, fmt.Errorf("gpu: L2 flush: %w", err)
		}
		c.flush = f
	}
	f := c.flush
	return func() error {
		return c.d.check(c.d.launch(f.fn, f.grid, Dim(256), 0, c.stream, f.args.array()), "cuLaunchKernel", "L2 flush")
	}, nil
}

func (c *Context) newL2Flush() (*l2Flush, error) {
	d := c.d
	bytes := 2 * c.info.L2Bytes
	if bytes == 0 {
		bytes = 128 << 20
	}
	f := &l2Flush{grid: Dim(4 * max(c.info.SMs, 1))}
	var p uint64
	if err := d.check(d.cuMemAlloc(&p, uint64(bytes)), "cuMemAlloc_v2", "L2 flush buffer"); err != nil {
		return nil, err
	}
	f.buf = DevicePtr(p)
	if err := errors.Join(d.check(d.cuMemsetD32Async(p, 0, uint64(bytes/4), c.stream), "cuMemsetD32Async", "L2 flush buffer"),
		c.sync("L2 flush buffer")); err != nil {
		f.release(d)
		return nil, err
	}
	var err error
	if f.module, f.fn, err = d.loadPTX(l2FlushPTX, "cudarepl_l2_flush"); err != nil {
		f.release(d)
		return nil, err
	}
	// The words never XOR to the kernel's magic value, so it never writes
	// to its sink: the buffer itself.
	args, err := packArgs(d, []Arg{Ptr(f.buf), Int64(bytes / 16), Ptr(f.buf)})
	if err != nil {
		f.release(d)
		return nil, err
	}
	f.args = args
	return f, nil
}

// loadPTX loads kernel name of the harness's own from ptx, which the
// driver compiles for the GPU, and returns its module and function.
func (d *driverAPI) loadPTX(ptx, name string) (module, fn uintptr, err error) {
	text := dl.CString(ptx)
	var pin runtime.Pinner
	pin.Pin(&text[0])
	err = d.check(d.cuModuleLoadData(&module, &text[0]), "cuModuleLoadData", name)
	pin.Unpin()
	if err != nil {
		return 0, 0, err
	}
	if err := d.check(d.cuModuleGetFunction(&fn, module, name), "cuModuleGetFunction", name); err != nil {
		d.cuModuleUnload(module)
		return 0, 0, err
	}
	return module, fn, nil
}

// release frees the flush's buffer, module and arguments.
func (f *l2Flush) release(d *driverAPI) {
	if f.args != nil {
		f.args.release()
	}
	if f.module != 0 {
		d.cuModuleUnload(f.module)
	}
	if f.buf != 0 {
		d.cuMemFree(uint64(f.buf))
	}
}

// benchCall times a Bench in the worker, reporting progress as it goes.
type benchCall struct{ Bench Bench }

func (c benchCall) serve(dev Device, progress func(int, int)) (any, error) {
	b := c.Bench
	b.Progress = progress
	return dev.Bench(b)
}

// Bench times b inside the worker; b.Progress is called here as the
// worker reports.
func (w *Worker) Bench(b Bench) (Timing, error) {
	// The worker fills in the defaults; a copy is checked here, so that a
	// bad bench fails without a round trip and Warmup < 0 (none) arrives
	// as given.
	checked := b
	if err := checked.defaults(); err != nil {
		return Timing{}, err
	}
	b.Name = checked.Name
	var ops []Op
	for _, list := range b.Ops {
		ops = append(ops, list...)
	}
	return answer[Timing](w.doOps("bench "+b.Name, benchCall{b}, b.Progress, ops...))
}

func init() {
	registerType(benchCall{})
	registerType(Timing{})
}
