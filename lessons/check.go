package lessons

import (
	"errors"
	"slices"
	"strings"

	"cudarepl/gpu"
)

// CheckStep runs impls once at every check size of the problem and checks
// every output element against the CPU reference.
type CheckStep struct {
	Impls   []string // nil checks every impl of the problem
	Problem *Problem // nil: the lesson's
	// More are further problems the step checks, every impl of each,
	// after Problem: a lesson whose sweeps measure several problems checks
	// them all in its one check step.
	More []*Problem
}

// Kind is "check".
func (*CheckStep) Kind() string { return "check" }

// records says that the step's results are checks.
func (*CheckStep) records() string { return "check" }

// problems returns the problem it checks (the lesson's where it names
// none), then More.
func (a *CheckStep) problems(l *Lesson) []*Problem {
	var out []*Problem
	if p, err := problemOf(l, a.Problem); err == nil {
		out = append(out, p)
	}
	return append(out, a.More...)
}

// Do runs the checks live, or shows the recorded ones in replay.
func (a *CheckStep) Do(env *Env, l *Lesson, step string) error {
	p, err := problemOf(l, a.Problem)
	if err != nil {
		return err
	}
	first := a.check(env, l, step, p, len(a.More) > 0, true)
	for _, more := range a.More {
		env.printf("\n")
		if err := (&CheckStep{}).check(env, l, step, more, true, more.Kernels != p.Kernels); err != nil && first == nil {
			first = err
		}
		if errors.Is(first, ErrStopped) {
			break
		}
	}
	return first
}

// check checks p, or shows its recorded checks in replay: those of step,
// only p's own impls' where the step checks several problems (shared),
// and then what the kernels compile to here if compile is set (once for
// problems whose kernels share a file).
func (a *CheckStep) check(env *Env, l *Lesson, step string, p *Problem, shared, compile bool) error {
	_, err := env.LiveOr(func() ([]Result, error) { return a.run(env, l, step, p) }, func() ([]Result, error) {
		rs := a.recorded(l, step, p, shared)
		if shared {
			env.printf("%s:\n", p.Name)
		}
		env.replayNote("these checks ran", rs)
		env.showChecks(p, rs)
		if env.canceled() != nil {
			return rs, ErrStopped // Ctrl-C: no compile report after it
		}
		if !compile {
			return rs, nil
		}
		return rs, compileOnly(env, l, p, a.Impls)
	})
	return err
}

// replayNote says where the recorded results rs shown next come from,
// after what they are ("these checks ran", "showing results"): with why
// there is no GPU the first time in a session, and in a short line after
// that, so that a lesson replayed end to end does not repeat the reason
// before every table.
func (e *Env) replayNote(what string, rs []Result) {
	src := ResultSet{Results: rs}.Source()
	if e.once(replayNoteKey) {
		e.printf("No GPU here (%v): %s %s.\n", e.NoGPU, what, src)
		return
	}
	e.printf("%s %s.\n", strings.ToUpper(what[:1])+what[1:], src)
}

// recorded returns the checks of p recorded for step, only p's own
// impls' where the step checks several problems (shared).
func (a *CheckStep) recorded(l *Lesson, step string, p *Problem, shared bool) []Result {
	rs := l.recorded.Filter(step, "check")
	if shared {
		rs = slices.DeleteFunc(rs, func(r Result) bool { _, err := p.impl(r.Variant); return err != nil })
	}
	if len(rs) == 0 && a.Impls != nil { // "run NAME": the variant's checks from any step
		for _, r := range l.recorded.Results {
			if r.Kind == "check" && slices.Contains(a.Impls, r.Variant) {
				rs = append(rs, r)
			}
		}
	}
	return rs
}

// run checks p's impls, or those the step names, at every check size, and
// shows the checks.
func (a *CheckStep) run(env *Env, l *Lesson, step string, p *Problem) ([]Result, error) {
	impls, err := p.impls(a.Impls)
	if err != nil {
		return nil, err
	}
	var out []Result
	var firstErr error
	total := len(impls) * len(p.CheckSizes)
	for _, impl := range impls {
		k, err := env.implKernel(l, p, impl)
		if err != nil {
			return out, err
		}
		rs, err := checkImpl(env, l, p, step, impl, k, len(out), total)
		out = append(out, rs...)
		if errors.Is(err, ErrStopped) {
			env.PrintTable(checkTable(out))
			return out, err
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	env.progress(total, total, "")
	ref := p.Reference
	if ref == "" {
		ref = "a float64 CPU reference"
	}
	env.printf("%s, %s: every element checked against %s\n", p.Name, ResultSet{Results: out}.Source(), ref)
	env.showChecks(p, out)
	return out, firstErr
}

// checkResult is the result a check of impl at size s starts from.
func checkResult(l *Lesson, p *Problem, step string, impl Impl, s Size) Result {
	return Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: impl.Name, Size: p.label(s), Dims: s, DType: p.DType, Block: impl.block()}
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
