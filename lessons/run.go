package lessons

import "cudarepl/gpu"

// Run is a step action written as a function, for what fits no other.
type Run struct {
	// Name is shown in listings: "run" when empty. "measure" marks a run
	// that measures on the GPU and records its results, which bench runs
	// along with the sweeps.
	Name string
	// F runs the step. Where it shows results, Env.Measured (or Env.LiveOr)
	// gives them: measured on a GPU, recorded with the lesson in replay.
	F func(env *Env, l *Lesson, step string) error
	// Replay, if set, runs in F's place without a GPU, for a step that
	// only runs on one and has nothing recorded to show: it says what F
	// would do there.
	Replay func(env *Env, l *Lesson, step string) error

	// Kernel, if set, is the lesson's kernel F launches (through
	// Env.Kernel), with Block threads per block at Size: F reads the
	// launch back with Env.Launch. A notebook shows the three in the
	// step's cell for the learner to change; F then runs theirs.
	Kernel string
	Block  int
	Size   Size
}

// Kind is the action's name.
func (r *Run) Kind() string {
	if r.Name == "" {
		return "run"
	}
	return r.Name
}

// launch returns the kernel F launches, and the threads per block and the
// size it launches it with.
func (r *Run) launch() (string, int, Size) { return r.Kernel, r.Block, r.Size }

// Do calls F, with Env.Launch giving the step's launch: the learner's
// where env carries their edit of the Run's kernel (RunEdited), else the
// Run's own.
func (r *Run) Do(env *Env, l *Lesson, step string) error {
	block, size := r.Block, r.Size
	if ed := env.edit; ed != nil && ed.Kernel == r.Kernel {
		if ed.Block > 0 {
			block = ed.Block
		}
		if ed.Size != nil {
			size = ed.Size
		}
	}
	env = env.withLaunch(block, size)
	if r.Replay == nil {
		return r.F(env, l, step)
	}
	_, err := env.LiveOr(func() ([]Result, error) { return nil, r.F(env, l, step) },
		func() ([]Result, error) { return nil, r.Replay(env, l, step) })
	return err
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
	c, _, err := e.runOnce(p, s, impl, k, block)
	return c, err
}

// runOnce is RunOnce, returning the ops it ran too.
func (e *Env) runOnce(p *Problem, s Size, impl Impl, k gpu.Kernel, block int) (Case, []gpu.Op, error) {
	c, err := e.Setup(p, s)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, err
	}
	return c, ops, nil
}
