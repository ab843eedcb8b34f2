package lessons

import (
	"fmt"

	"cudarepl/gpu"
)

// implKernel loads the kernel that runs impl, a version from the problem's
// file. Library impls need none.
func (e *Env) implKernel(l *Lesson, p *Problem, impl Impl) (gpu.Kernel, error) {
	if impl.Library {
		return gpu.Kernel{}, nil
	}
	src, err := kernelSource(l, p.Kernels)
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
		return like
	}
	return impl
}

// checkOnce runs impl once at size s on fresh, poisoned buffers and checks
// every output element. The result records the outcome either way.
func checkOnce(env *Env, l *Lesson, p *Problem, step string, impl Impl, k gpu.Kernel, s Size) (Result, error) {
	r := Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: impl.Name, Size: p.label(s), Dims: s, DType: p.DType, Block: impl.block()}
	env.stamp(&r)
	if why := p.launchAs(impl).refuses(env, s); why != nil {
		r.Passed, r.Detail = true, "refused: "+why.Error()
		return r, nil
	}
	c, err := p.Setup(env, s)
	if err != nil {
		return r, fmt.Errorf("%s %s: %w", impl.Name, p.label(s), err)
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
		r.Detail = err.Error()
		return r, fmt.Errorf("%s %s: %w", impl.Name, p.label(s), err)
	}
	st, err := c.Check()
	r.MaxRelErr, r.Tolerance, r.Passed = st.MaxRelErr, st.Tol, err == nil
	if err != nil {
		r.Detail = err.Error()
		return r, fmt.Errorf("%s %s: %w", impl.Name, p.label(s), err)
	}
	return r, nil
}

// benchPoint measures impl at size s with block threads per block: checked
// before timing and again after, timed with the L2 flushed between
// repetitions when the case would otherwise sit in L2.
func benchPoint(env *Env, l *Lesson, p *Problem, step string, impl Impl, k gpu.Kernel, s Size, block int, ceiling Result) (Result, error) {
	r := Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: impl.Name, Size: p.label(s), Dims: s, DType: p.DType,
		Unit: p.Unit, Ceiling: ceiling.Throughput, CeilingName: ceiling.Variant}
	if !impl.Library {
		r.Block = block
	}
	env.stamp(&r)
	free0, _, _ := env.Dev.MemInfo()
	c, err := p.Setup(env, s)
	if err != nil {
		return r, fmt.Errorf("%s %s: %w", impl.Name, p.label(s), err)
	}
	defer c.Free()
	ops, err := c.Ops(p.launchAs(impl), k, block)
	if err != nil {
		return r, fmt.Errorf("%s %s: %w", impl.Name, p.label(s), err)
	}
	// After Ops: a case may upload an impl's operands only when asked for them.
	if free1, _, err := env.Dev.MemInfo(); err == nil && free0 > free1 {
		r.PeakMem = free0 - free1
	} else {
		r.PeakMem = c.Footprint()
	}
	check := func(when string) error {
		if err := c.Poison(); err != nil {
			return err
		}
		if err := env.Dev.Run(ops...); err != nil {
			return err
		}
		if _, err := c.Check(); err != nil {
			return fmt.Errorf("%s %s, %s timing: %w", impl.Name, s, when, err)
		}
		return nil
	}
	if err := check("before"); err != nil {
		return r, err
	}
	l2 := env.Dev.Info().L2Bytes
	t, err := env.Dev.Bench(gpu.Bench{
		Name: fmt.Sprintf("%s %s", impl.Name, s), Ops: [][]gpu.Op{ops},
		FlushL2: c.Footprint() < 4*l2, Reps: repsFor(p.Work(s)),
	})
	if err != nil {
		return r, err
	}
	// The timed runs rewrote the outputs: check those, then the whole again.
	if _, err := c.Check(); err != nil {
		return r, fmt.Errorf("%s %s, after timing: %w", impl.Name, s, err)
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
