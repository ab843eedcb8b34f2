package lessons

// Action is what a step runs. Actions are pointers (&lessons.Sweep{…}),
// and a step holds the very pointer its Def was given, by which another
// step finds it again (Env.Latest).
//
// What only some actions have, they say by implementing one of the small
// interfaces below, as an io.Writer that can also write itself out says
// so by implementing io.WriterTo; the framework asks for each with one
// type assertion, in the function beside it, and never switches over the
// concrete actions. A new action is one type in one file: Kind and Do,
// and the methods of those interfaces that fit it.
type Action interface {
	// Kind names the action for listings: "kernel", "check", "sweep",
	// "exercise", "run"; a Run's is its Name ("measure": bench runs it).
	Kind() string
	// Do runs the action of step (its title) of lesson l in env.
	Do(env *Env, l *Lesson, step string) error
}

// problemRunner is an action that runs problems: a check step, a sweep.
// Their impls are the lesson's variants ("run NAME", what a learner's
// kernel is judged like).
type problemRunner interface {
	// problems returns the problems it runs, the lesson's where it names
	// none.
	problems(l *Lesson) []*Problem
}

// problemsOf returns the problems a runs, if any.
func problemsOf(a Action, l *Lesson) []*Problem {
	if r, ok := a.(problemRunner); ok {
		return r.problems(l)
	}
	return nil
}

// kernelShower is an action that shows kernels (ShowKernel): a notebook
// gives each a cell for the learner to edit and try.
type kernelShower interface {
	// kernels returns the file in package kernels it shows them from (the
	// lesson's when "") and their names, nil where the file cannot be read.
	kernels(l *Lesson) (file string, names []string)
}

// kernelsOf returns the kernels a shows, and their file; ok is false
// where a shows none.
func kernelsOf(a Action, l *Lesson) (file string, names []string, ok bool) {
	if k, ok := a.(kernelShower); ok {
		file, names = k.kernels(l)
		return file, names, true
	}
	return "", nil, false
}

// sweeper is an action that measures impls of a problem at sizes that a
// caller may replace (a Sweep): env.Sizes replaces its sizes (the REPL's
// "bench 2^20", a notebook's sizes cell), env.Blocks its threads per
// block.
type sweeper interface {
	Action
	// swept returns what it measures.
	swept() sweepShape
}

// sweepShape is what a sweeper measures.
type sweepShape struct {
	problem *Problem // nil: the lesson's
	impls   []string // nil: every impl of the problem
	sizes   []Size
	blocks  []int // where set, it measures these threads per block at sizes[0], not sizes
}

// sweepOf returns a as a sweeper, where it is one.
func sweepOf(a Action) (sweeper, bool) {
	s, ok := a.(sweeper)
	return s, ok
}

// launcher is an action that launches one of the lesson's kernels itself
// (a Run with a Kernel): a notebook shows the kernel and its launch in the
// step's cell, and the learner's edit runs the step in the course's place.
type launcher interface {
	// launch returns the kernel it launches, "" for none, and the threads
	// per block and the size it launches it with.
	launch() (kernel string, block int, size Size)
}

// launchOf returns the kernel a launches and how; "" where it launches
// none.
func launchOf(a Action) (kernel string, block int, size Size) {
	if r, ok := a.(launcher); ok {
		return r.launch()
	}
	return "", 0, nil
}

// recorder is an action whose results are not measurements (Result.Kind
// "bench") but of another kind: a check step's are checks.
type recorder interface {
	// records returns the Kind of the results it records.
	records() string
}

// recordsOf returns the kind of results a records: "bench" unless it
// says otherwise.
func recordsOf(a Action) string {
	if r, ok := a.(recorder); ok {
		return r.records()
	}
	return "bench"
}

// drawer is an action that draws what it measured (a Sweep): "plot" draws
// it again from the latest results, and each of its figures is saved
// under a name of its own.
type drawer interface {
	// draw shows rs, what step measured, as tables and figures.
	draw(env *Env, l *Lesson, step string, rs []Result) error
	// figures names the figures draw saves, at most.
	figures(step string) []string
}

// drawerOf returns a as a drawer, where it is one.
func drawerOf(a Action) (drawer, bool) {
	d, ok := a.(drawer)
	return d, ok
}
