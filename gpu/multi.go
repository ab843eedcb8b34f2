package gpu

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// DevOp is one step of a Multi: Op, prepared and enqueued on GPU Device.
// Device -1 is an op that spans every GPU itself (a NCCL collective): it
// is prepared and enqueued with GPU 0's context current, and reaches the
// others through Exec.Peer and Exec.DeviceStream.
type DevOp struct {
	Device int
	Op     Op
}

// Multi describes work on several GPUs of one process, timed as one: each
// repetition enqueues every step in order, from GPU 0's thread, between a
// start and an end event on stream 0 of each GPU.
type Multi struct {
	Name    string // shown in errors and progress; optional
	Devices int    // the GPUs it runs on: 0 to Devices-1
	Steps   []DevOp
	Warmup  int // untimed repetitions first
	Reps    int // timed repetitions, at least 1
	// Timeline asks for each step's span in the last repetition
	// (MultiResult.Spans), from events recorded around it on its GPU.
	Timeline bool

	// Progress, if set, is called after each repetition, warm-up
	// included, with the number done and the total. It runs in the
	// caller's process.
	Progress func(done, total int)
}

// MultiResult is what RunMulti measured.
type MultiResult struct {
	// Times has one sample per timed repetition: the longest of the GPUs'
	// times from their start event to their end event.
	Times []time.Duration
	// PerGPU is each GPU's own time of each timed repetition: [gpu][rep].
	PerGPU [][]time.Duration
	// Spans, where Multi.Timeline asked, is each step's span on its GPU
	// in the last repetition, from its GPU's start event: [gpu][…], in
	// the order of the steps. A step of Device -1 has a span on every GPU.
	Spans [][]Span
}

// title is "multi", and the name where m has one, for messages.
func (m *Multi) title() string {
	if m.Name == "" {
		return "multi"
	}
	return fmt.Sprintf("multi %q", m.Name)
}

// check says what is wrong with m before anything runs, in one line.
func (m *Multi) check() error {
	switch {
	case m.Devices < 1:
		return fmt.Errorf("gpu: %s: %d GPUs; Devices must be at least 1", m.title(), m.Devices)
	case len(m.Steps) == 0:
		return fmt.Errorf("gpu: %s: no steps", m.title())
	case m.Reps < 1:
		return fmt.Errorf("gpu: %s: %d timed repetitions; Reps must be at least 1", m.title(), m.Reps)
	case m.Warmup < 0:
		return fmt.Errorf("gpu: %s: %d warm-up repetitions; Warmup must not be negative", m.title(), m.Warmup)
	}
	for k, s := range m.Steps {
		if s.Op == nil {
			return fmt.Errorf("gpu: %s: step %d on GPU %d: nil op", m.title(), k, s.Device)
		}
		if s.Device < -1 || s.Device >= m.Devices {
			return fmt.Errorf("gpu: %s: step %d (%s) is on GPU %d, but Devices is %d: give 0 to %d, or -1 for an op that spans every GPU",
				m.title(), k, s.Op.Name(), s.Device, m.Devices, m.Devices-1)
		}
	}
	return nil
}

// fits says whether the n GPUs the driver shows are enough for m.
func (m *Multi) fits(n int) error {
	if m.Devices > n {
		return fmt.Errorf("gpu: %s on %d GPUs: %s", m.title(), m.Devices, strings.TrimPrefix(noSuchGPU(m.Devices-1, n).Error(), "gpu: "))
	}
	return nil
}

// report tells m.Progress, where there is one, that done of total
// repetitions are done.
func (m *Multi) report(done, total int) {
	if m.Progress != nil {
		m.Progress(done, total)
	}
}

// RunMulti runs m on GPUs 0 to m.Devices-1 of dev's process and times
// it: for each repetition it records a start event on stream 0 of every
// GPU (which the GPU's other streams wait for), enqueues every step in
// order on its GPU (OnStream inside a step picks the stream), makes
// stream 0 of each GPU wait for every other stream made there, records
// an end event on it, and waits for all. The work runs on GPU 0's
// thread, which holds every GPU's context meanwhile (Exec.Peer), so that
// a WaitPeer finds the event the Record before it recorded; a step's
// kernels must be loaded on its GPU (On; a Worker loads them there
// itself, as it does for GPU 0). Errors name the GPU and the step. Like
// Bench, the repetitions take turns on each GPU with other processes'
// timed work.
func RunMulti(dev Device, m Multi) (MultiResult, error) {
	if err := m.check(); err != nil {
		return MultiResult{}, err
	}
	switch d := dev.(type) {
	case *Worker:
		return d.runMulti(m)
	case *Context:
		dev = d.rootContext()
	}
	if err := m.fits(dev.Info().Devices); err != nil {
		return MultiResult{}, err
	}
	return answer[MultiResult](dev.Call(multiRequest{m}))
}

// multiRequest runs a Multi on GPU 0's thread of a context.
type multiRequest struct{ Multi Multi }

// Serve runs the Multi.
func (r multiRequest) Serve(x *Exec) (any, error) {
	if x.c.root != nil {
		return nil, fmt.Errorf("gpu: %s: it runs from GPU 0, not GPU %d", r.Multi.title(), x.c.ordinal)
	}
	return x.runMulti(r.Multi)
}

// multiCall carries a Multi to the worker, which reports its progress.
type multiCall struct{ Multi Multi }

func (c multiCall) serve(dev Device, progress func(int, int)) (any, error) {
	m := c.Multi
	m.Progress = progress
	return RunMulti(dev, m)
}

// runMulti runs m in the worker, after loading each step's kernels on its
// GPU there.
func (w *Worker) runMulti(m Multi) (MultiResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := m.fits(w.info.Devices); err != nil {
		return MultiResult{}, err
	}
	op := m.title()
	if err := w.ready(op); err != nil {
		return MultiResult{}, err
	}
	for _, s := range m.Steps {
		if err := w.view(max(s.Device, 0)).ensureLoaded([]Op{s.Op}); err != nil {
			return MultiResult{}, err
		}
	}
	return answer[MultiResult](w.view(0).call(op, multiCall{m}, m.Progress))
}

// multiRun is a Multi being run on GPU 0's thread: the Exec of each GPU,
// each step prepared, and the events that time them, each made in its
// GPU's context.
type multiRun struct {
	m        Multi
	gpus     []*Exec
	steps    []Step
	streams  []int          // the stream each step is enqueued on, by OnStream
	start    []uintptr      // by GPU
	end      []uintptr      // by GPU
	marks    [][][2]uintptr // [step][gpu]: the events before and after the step, for the timeline
	joins    []map[int]uintptr
	released bool
}

// runMulti runs m: x is GPU 0's Exec, in a call of its.
func (x *Exec) runMulti(m Multi) (res MultiResult, err error) {
	if err := m.fits(x.c.info.Devices); err != nil {
		return res, err
	}
	r := &multiRun{m: m, gpus: make([]*Exec, m.Devices), joins: make([]map[int]uintptr, m.Devices)}
	for i := range r.gpus {
		if r.gpus[i], err = x.Peer(i); err != nil {
			return res, fmt.Errorf("gpu: %s: %w", m.title(), err)
		}
	}
	defer x.MakeCurrent()
	if err := r.prepare(); err != nil {
		return res, err
	}
	defer r.release()
	defer r.destroyEvents()
	// After a failure part of a run may still be queued: wait for every
	// GPU (its error, if any, is the one already returned) before the
	// events and what was prepared go.
	defer func() {
		if err != nil {
			r.wait()
		}
	}()
	if err := r.makeEvents(); err != nil {
		return res, err
	}
	total := m.Warmup + m.Reps
	res.PerGPU = make([][]time.Duration, m.Devices)
	err = r.takeTurns(r.byPCI(), func() { m.report(0, total) }, func() error {
		for rep := range total {
			timeline := m.Timeline && rep == total-1
			if err := r.enqueue(timeline); err != nil {
				return err
			}
			if err := r.wait(); err != nil {
				return err
			}
			if rep >= m.Warmup {
				if err := r.times(&res); err != nil {
					return err
				}
			}
			if timeline {
				if res.Spans, err = r.spans(); err != nil {
					return err
				}
			}
			m.report(rep+1, total)
		}
		return nil
	})
	return res, err
}

// on is the GPUs step k runs on: its own, or every one for Device -1.
func (r *multiRun) on(k int) []int {
	if d := r.m.Steps[k].Device; d >= 0 {
		return []int{d}
	}
	all := make([]int, len(r.gpus))
	for g := range all {
		all[g] = g
	}
	return all
}

// exec is the Exec step k is prepared and enqueued with.
func (r *multiRun) exec(k int) *Exec { return r.gpus[max(r.m.Steps[k].Device, 0)] }

// stepErr is err, saying on which GPU and at which step.
func (r *multiRun) stepErr(k int, err error) error {
	s := r.m.Steps[k]
	where := fmt.Sprintf("GPU %d", s.Device)
	if s.Device < 0 {
		where = "every GPU"
	}
	return fmt.Errorf("%s, step %d (%s): %w", where, k, s.Op.Name(), err)
}

// prepare prepares every step with its GPU's context current; on failure,
// what was prepared is released already.
func (r *multiRun) prepare() error {
	r.streams = make([]int, len(r.m.Steps))
	for k, s := range r.m.Steps {
		x := r.exec(k)
		if err := x.MakeCurrent(); err != nil {
			r.release()
			return err
		}
		st, err := s.Op.Prepare(x)
		if err == nil && st.Enqueue == nil {
			if st.Release != nil {
				st.Release()
			}
			err = fmt.Errorf("gpu: %s prepared no work", s.Op.Name())
		}
		if err != nil {
			r.release()
			return r.stepErr(k, err)
		}
		r.steps = append(r.steps, st)
		_, r.streams[k] = unwrap(s.Op)
		// The step's stream is made now on each GPU it runs on, so that
		// it waits for the start of the first repetition too.
		for _, g := range r.on(k) {
			if err := r.gpus[g].MakeCurrent(); err != nil {
				r.release()
				return err
			}
			if _, err := r.gpus[g].c.streamNumbered(r.streams[k]); err != nil {
				r.release()
				return r.stepErr(k, err)
			}
		}
	}
	return nil
}

// release frees what the steps' Prepare made, each with its GPU's context
// current.
func (r *multiRun) release() {
	if r.released {
		return
	}
	r.released = true
	for k, st := range r.steps {
		if st.Release != nil {
			r.exec(k).MakeCurrent()
			st.Release()
		}
	}
}

// newEvent makes an event in GPU g's context, which is current.
func (r *multiRun) newEvent(g int, what string) (uintptr, error) {
	d := r.gpus[g].c.d
	var e uintptr
	err := d.check(d.cuEventCreate(&e, 0), "cuEventCreate", fmt.Sprintf("GPU %d, %s", g, what))
	return e, err
}

// makeEvents makes each GPU's start and end events and, for a timeline,
// the events around each step on each GPU it runs on.
func (r *multiRun) makeEvents() error {
	n := len(r.gpus)
	r.start, r.end = make([]uintptr, n), make([]uintptr, n)
	if r.m.Timeline {
		r.marks = make([][][2]uintptr, len(r.steps))
		for k := range r.marks {
			r.marks[k] = make([][2]uintptr, n)
		}
	}
	for g, x := range r.gpus {
		if err := x.MakeCurrent(); err != nil {
			return err
		}
		var err error
		if r.start[g], err = r.newEvent(g, "start"); err != nil {
			return err
		}
		if r.end[g], err = r.newEvent(g, "end"); err != nil {
			return err
		}
	}
	for k := range r.marks {
		for _, g := range r.on(k) {
			if err := r.gpus[g].MakeCurrent(); err != nil {
				return err
			}
			for i := range r.marks[k][g] {
				var err error
				if r.marks[k][g][i], err = r.newEvent(g, "timeline"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// destroyEvents destroys every event made, each with its GPU's context
// current.
func (r *multiRun) destroyEvents() {
	if r.start == nil {
		return
	}
	for g, x := range r.gpus {
		x.MakeCurrent()
		d := x.c.d
		evs := []uintptr{r.start[g], r.end[g]}
		for k := range r.marks {
			evs = append(evs, r.marks[k][g][:]...)
		}
		evs = append(evs, slices.Collect(maps.Values(r.joins[g]))...)
		for _, e := range evs {
			if e != 0 {
				d.cuEventDestroy(e)
			}
		}
	}
}

// record records event e on stream s, with its GPU's context current.
func record(x *Exec, e, s uintptr, what string) error {
	return x.c.d.check(x.c.d.cuEventRecord(e, s), "cuEventRecord", fmt.Sprintf("GPU %d, %s", x.c.ordinal, what))
}

// enqueue enqueues one repetition: the start events, which every other
// stream made on their GPU waits for, every step in order (with the
// events around it, for the timeline), and the end events after each
// GPU's stream 0 has waited for its other streams.
func (r *multiRun) enqueue(timeline bool) error {
	for g, x := range r.gpus {
		if err := x.MakeCurrent(); err != nil {
			return err
		}
		if err := record(x, r.start[g], x.c.stream, "start"); err != nil {
			return err
		}
		d := x.c.d
		for _, n := range slices.Sorted(maps.Keys(x.c.streams)) {
			if err := d.check(d.cuStreamWaitEvent(x.c.streams[n], r.start[g], 0), "cuStreamWaitEvent", fmt.Sprintf("GPU %d, stream %d after the start", g, n)); err != nil {
				return err
			}
		}
	}
	for k, st := range r.steps {
		if timeline {
			if err := r.mark(k, 0); err != nil {
				return r.stepErr(k, err)
			}
		}
		if err := r.exec(k).MakeCurrent(); err != nil {
			return err
		}
		if err := st.Enqueue(); err != nil {
			return r.stepErr(k, err)
		}
		if timeline {
			if err := r.mark(k, 1); err != nil {
				return r.stepErr(k, err)
			}
		}
	}
	for g, x := range r.gpus {
		if err := r.join(g, x); err != nil {
			return err
		}
	}
	return nil
}

// mark records step k's event before (which 0) or after (1) it, on its
// stream of each GPU it runs on.
func (r *multiRun) mark(k, which int) error {
	for _, g := range r.on(k) {
		x := r.gpus[g]
		if err := x.MakeCurrent(); err != nil {
			return err
		}
		s, err := x.c.streamNumbered(r.streams[k])
		if err != nil {
			return err
		}
		if err := record(x, r.marks[k][g][which], s, "timeline"); err != nil {
			return err
		}
	}
	return nil
}

// join makes stream 0 of GPU g wait for every other stream made there
// (by OnStream, or Exec.DeviceStream), and records g's end event on it.
func (r *multiRun) join(g int, x *Exec) error {
	d := x.c.d
	if err := x.MakeCurrent(); err != nil {
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(x.c.streams)) {
		e, ok := r.joins[g][n]
		if !ok {
			var err error
			if e, err = r.newEvent(g, fmt.Sprintf("stream %d done", n)); err != nil {
				return err
			}
			if r.joins[g] == nil {
				r.joins[g] = map[int]uintptr{}
			}
			r.joins[g][n] = e
		}
		if err := record(x, e, x.c.streams[n], fmt.Sprintf("stream %d done", n)); err != nil {
			return err
		}
		if err := d.check(d.cuStreamWaitEvent(x.c.stream, e, 0), "cuStreamWaitEvent", fmt.Sprintf("GPU %d, stream 0 after stream %d", g, n)); err != nil {
			return err
		}
	}
	return record(x, r.end[g], x.c.stream, "end")
}

// wait waits for every GPU's end event.
func (r *multiRun) wait() error {
	for g, x := range r.gpus {
		d := x.c.d
		if g >= len(r.end) || r.end[g] == 0 {
			continue // its events were never made
		}
		if err := x.MakeCurrent(); err != nil {
			return err
		}
		if err := d.check(d.cuEventSynchronize(r.end[g]), "cuEventSynchronize", fmt.Sprintf("GPU %d, after %s", g, r.m.title())); err != nil {
			return err
		}
	}
	return nil
}

// elapsed is the time from GPU g's start event to e, an event of g's,
// with g's context current.
func (r *multiRun) elapsed(g int, e uintptr) (time.Duration, error) {
	d := r.gpus[g].c.d
	if err := r.gpus[g].MakeCurrent(); err != nil {
		return 0, err
	}
	var ms float32
	err := d.check(d.cuEventElapsedTime(&ms, r.start[g], e), "cuEventElapsedTime", fmt.Sprintf("GPU %d", g))
	return time.Duration(float64(ms) * 1e6), err
}

// times adds the repetition's times to res.
func (r *multiRun) times(res *MultiResult) error {
	var longest time.Duration
	for g := range r.gpus {
		t, err := r.elapsed(g, r.end[g])
		if err != nil {
			return err
		}
		res.PerGPU[g] = append(res.PerGPU[g], t)
		longest = max(longest, t)
	}
	res.Times = append(res.Times, longest)
	return nil
}

// spans reads the timeline of the repetition just run.
func (r *multiRun) spans() ([][]Span, error) {
	out := make([][]Span, len(r.gpus))
	for k, s := range r.m.Steps {
		name := unwrapped(s.Op).Name()
		for _, g := range r.on(k) {
			start, err1 := r.elapsed(g, r.marks[k][g][0])
			end, err2 := r.elapsed(g, r.marks[k][g][1])
			if err := errors.Join(err1, err2); err != nil {
				return nil, err
			}
			out[g] = append(out[g], Span{Stream: r.streams[k], Op: name, Start: start, End: end})
		}
	}
	return out, nil
}

// byPCI is the GPUs' contexts in the order of their PCI addresses: the
// order in which every process takes their locks (share.Lock), whatever
// CUDA_VISIBLE_DEVICES made of their ordinals.
func (r *multiRun) byPCI() []*Context {
	cs := make([]*Context, len(r.gpus))
	for g, x := range r.gpus {
		cs[g] = x.c
	}
	slices.SortStableFunc(cs, func(a, b *Context) int { return strings.Compare(a.info.PCIAddress, b.info.PCIAddress) })
	return cs
}

// takeTurns runs f holding each context's turn on its GPU (share.Lock),
// taken in order: no other process's timed work runs on any of them
// meanwhile.
func (r *multiRun) takeTurns(cs []*Context, beat func(), f func() error) error {
	if len(cs) == 0 {
		return f()
	}
	c := cs[0]
	return c.turns.Timed(r.m.title(), c.info.PCIAddress, beat, func() error { return r.takeTurns(cs[1:], beat, f) })
}

// nvlsEnv is NCCL's switch for NVLink SHARP, whose multicast objects
// (cuMulticastCreate) must stay off on the machines this course runs
// on: gpu sets it to "0" in every process it starts, whatever it was,
// and in the worker itself as it starts; nothing in gpu calls
// cuMulticastCreate.
const nvlsEnv = "NCCL_NVLS_ENABLE"

// childEnv is what every process gpu starts has in its environment over
// what it inherits (a later entry wins in exec.Cmd.Env).
var childEnv = []string{nvlsEnv + "=0"}

// keepNVLSOff sets nvlsEnv to "0" in this process, before any library
// reads it.
func keepNVLSOff() { os.Setenv(nvlsEnv, "0") }

func init() {
	for _, v := range []any{multiCall{}, MultiResult{}} {
		registerType(v)
	}
}
