package lessons

import (
	"cmp"
	"errors"
	"fmt"

	"cudarepl/gpu"
)

// What became of a check or a measurement that did not simply run: the
// Outcome of its Result. A result that ran has none.
const (
	Refused     = "refused"       // the impl cannot run this size, or not on this GPU
	OutOfMemory = "out of memory" // the size needs more memory than is free; nothing was allocated
	TimedOut    = "timed out"     // it ran past the worker's time limit
	Faulted     = "faulted"       // it killed its worker (an illegal address, say)
	Skipped     = "skipped"       // not run: an earlier size of the same impl timed out or faulted
)

// implKernel loads the kernel that runs impl, a version from the problem's
// file or the impl's own. Library impls need none.
func (e *Env) implKernel(l *Lesson, p *Problem, impl Impl) (gpu.Kernel, error) {
	if impl.Library {
		return gpu.Kernel{}, nil
	}
	src, err := kernelSource(l, cmp.Or(impl.File, p.Kernels))
	if err != nil {
		return gpu.Kernel{}, err
	}
	return e.Kernel(src, impl.Name)
}

// launchAs is the impl whose launch shape impl uses: itself, or for a
// learner's kernel the version it is judged like.
func (p *Problem) launchAs(impl Impl) Impl {
	if impl.Like == "" {
		return impl
	}
	if like, err := p.impl(impl.Like); err == nil {
		like.Plan = impl.Plan
		return like
	}
	return impl
}

// before says whether size s of impl can run at all: it may be refused by
// the impl, or need more memory than is free. A result with its Outcome
// set comes back when it cannot, and nothing has been allocated.
func (e *Env) before(p *Problem, impl Impl, s Size, r Result) (Result, bool) {
	if err := e.fits(p, impl, s); err != nil {
		r.Outcome, r.Detail = OutOfMemory, err.Error()
		r.NeedMem = p.need(impl, s).Device
		return r, false
	}
	if why := p.launchAs(impl).refuses(e, s); why != nil {
		r.Outcome, r.Detail = Refused, why.Error()
		return r, false
	}
	return r, true
}

// failure records in r what err did: a time-out or a fault of the worker,
// a device that ran out of memory, or a plain failure. It returns err
// wrapped with the impl and size, or nil where err only says the size did
// not fit.
func failure(r *Result, p *Problem, impl Impl, s Size, err error) error {
	var we *gpu.WorkerError
	switch {
	case gpu.IsOutOfMemory(err) && p.Memory != nil:
		oom := &OutOfMemoryError{What: p.Name + " " + powerLabel(p, s), Where: "device", Need: p.Memory(s).Device}
		r.Outcome, r.Detail, r.NeedMem = OutOfMemory, oom.Error(), oom.Need
		return nil
	case errors.As(err, &we) && we.TimedOut:
		r.Outcome = TimedOut
	case errors.As(err, &we):
		r.Outcome = Faulted
	}
	r.Detail = err.Error()
	return fmt.Errorf("%s %s: %w", impl.Name, p.label(s), err)
}

// checkResult is the result a check of impl at size s starts from.
func checkResult(l *Lesson, p *Problem, step string, impl Impl, s Size) Result {
	return Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: impl.Name, Size: p.label(s), Dims: s, DType: p.DType, Block: impl.block()}
}

// benchResult is the result a measurement of impl at size s with block
// threads per block starts from. A library impl has no block.
func benchResult(l *Lesson, p *Problem, step string, impl Impl, s Size, block int) Result {
	r := Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: impl.Name, Size: p.label(s), Dims: s, DType: p.DType, Unit: p.Unit}
	if !impl.Library {
		r.Block = block
	}
	return r
}

// skip records r as not run, and why, and returns it.
func (e *Env) skip(r Result, why string) Result {
	r.Outcome, r.Detail = Skipped, why
	e.stamp(&r)
	e.record(r)
	return r
}

// breaks says why the sizes of an impl after r are skipped: it timed out
// or faulted there, and each further size would cost a time limit or a
// worker again. It is "" when r did neither.
func breaks(r Result) string {
	if r.Outcome == TimedOut || r.Outcome == Faulted {
		return fmt.Sprintf("after it %s at %s", r.Outcome, r.Size)
	}
	return ""
}

// checkOnce runs impl once at size s on fresh, poisoned buffers and checks
// every output element. The result records the outcome either way.
func checkOnce(env *Env, l *Lesson, p *Problem, step string, impl Impl, k gpu.Kernel, s Size) (Result, error) {
	r := checkResult(l, p, step, impl, s)
	env.stamp(&r)
	r, ok := env.before(p, impl, s, r)
	if !ok {
		return r, nil
	}
	c, err := p.Setup(env, s)
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	defer c.Free()
	ops, err := c.Ops(p.launchAs(impl), k, impl.block())
	if err == nil {
		err = c.Poison()
	}
	if err == nil {
		err = env.Dev.Run(ops...)
	}
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	st, err := c.Check()
	r.MaxRelErr, r.Tolerance, r.Passed = st.MaxRelErr, st.Tol, err == nil
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	return r, nil
}

// checkImpl checks impl at every check size of p, in order. After a
// time-out or a fault the remaining sizes are skipped with the reason:
// an endless kernel costs one time limit, not one per size. done counts
// the checks before this impl's, for the progress bar.
func checkImpl(env *Env, l *Lesson, p *Problem, step string, impl Impl, k gpu.Kernel, done, total int) ([]Result, error) {
	var out []Result
	var first error
	broke := "" // why the remaining sizes are skipped
	var sanitized map[string]bool
	if env.sanitizing != "" {
		sanitized = env.sanitizerSizes(p, impl)
	}
	for _, s := range p.CheckSizes {
		if err := env.canceled(); err != nil {
			return out, ErrStopped
		}
		why := broke
		if why == "" && sanitized != nil && !sanitized[s.String()] && p.launchAs(impl).refuses(env, s) == nil {
			why = "too large to run under compute-sanitizer; a smaller size runs the same code"
		}
		if why != "" {
			out = append(out, env.skip(checkResult(l, p, step, impl, s), why))
			continue
		}
		env.progress(done+len(out), total, impl.Name+" "+p.label(s))
		r, err := checkOnce(env, l, p, step, impl, k, s)
		env.record(r)
		out = append(out, r)
		if err != nil && first == nil {
			first = err
		}
		broke = breaks(r)
	}
	return out, first
}

// benchPoint measures impl at size s with block threads per block: checked
// before timing and again after, timed with the L2 flushed between
// repetitions when the case would otherwise sit in L2. ceiling is called
// once a point actually runs, so that a sweep whose sizes are all refused
// measures nothing.
func benchPoint(env *Env, l *Lesson, p *Problem, step string, impl Impl, k gpu.Kernel, s Size, block int, ceiling func() (Result, error)) (Result, error) {
	r := benchResult(l, p, step, impl, s, block)
	env.stamp(&r)
	r, ok := env.before(p, impl, s, r)
	if !ok {
		return r, nil
	}
	if p.Ceiling != "" {
		ceil, err := ceiling()
		if err != nil {
			return r, err
		}
		r.Ceiling, r.CeilingName = ceil.Throughput, ceil.Variant
	}
	r.Peak, r.PeakName = p.peak(impl, env.Dev.Info())
	free0, _, _ := env.Dev.MemInfo()
	c, err := p.Setup(env, s)
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	defer c.Free()
	freeSetup, _, _ := env.Dev.MemInfo()
	ops, err := c.Ops(p.launchAs(impl), k, block)
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	footprint := p.Memory(s).Device
	// Memory is read after Ops, since a case may allocate an impl's
	// buffers only when asked for them, and again after the first run,
	// since a library may allocate its workspace only then.
	held := func() {
		free1, _, err := env.Dev.MemInfo()
		if err != nil {
			return
		}
		r.PeakMem = max(r.PeakMem, free0-free1)
		r.ExtraMem = max(r.ExtraMem, freeSetup-free1)
	}
	held()
	check := func(when string) error {
		if err := c.Poison(); err != nil {
			return err
		}
		if err := env.Dev.Run(ops...); err != nil {
			return err
		}
		if _, err := c.Check(); err != nil {
			return fmt.Errorf("%s timing: %w", when, err)
		}
		return nil
	}
	if err := check("before"); err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	held()
	if r.PeakMem <= 0 {
		r.PeakMem = footprint
	}
	l2 := env.Dev.Info().L2Bytes
	t, err := env.Dev.Bench(gpu.Bench{
		Name: fmt.Sprintf("%s %s", impl.Name, s), Ops: [][]gpu.Op{ops},
		FlushL2: footprint < 4*l2, Reps: repsFor(p.Work(s)),
	})
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	// The timed runs rewrote the outputs: check those, then the whole again.
	if _, err := c.Check(); err != nil {
		return r, failure(&r, p, impl, s, fmt.Errorf("after timing: %w", err))
	}
	st := t.Stats()
	r = r.WithTimes(st)
	r.Throughput = p.units(st.Rate(p.Work(s)))
	r.Passed = true
	return r, nil
}

// repsFor picks more repetitions for small problems, whose times are short
// and noisy, and fewer for large ones.
func repsFor(work float64) int {
	switch {
	case work < 1e8:
		return 50
	case work < 1e10:
		return 20
	}
	return 10
}

// Setup sets up size s of p where it fits in the memory free now (an
// *OutOfMemoryError where it does not), for a Run step that launches a
// problem's kernel itself.
func (e *Env) Setup(p *Problem, s Size) (Case, error) {
	if err := e.fits(p, Impl{}, s); err != nil {
		return nil, err
	}
	return p.Setup(e, s)
}

// RunOnce sets up size s of p, poisons its outputs and runs impl's ops
// once, with kernel k and block threads per block: for a Run step that
// launches a kernel itself and then checks what it wrote. The caller frees
// the case.
func (e *Env) RunOnce(p *Problem, s Size, impl Impl, k gpu.Kernel, block int) (Case, error) {
	c, err := e.Setup(p, s)
	if err != nil {
		return nil, err
	}
	ops, err := c.Ops(impl, k, block)
	if err == nil {
		err = c.Poison()
	}
	if err == nil {
		err = e.Dev.Run(ops...)
	}
	if err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}
