package lessons

import (
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
