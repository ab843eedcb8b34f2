package lessons

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"cudarepl/gpu"
	"cudarepl/plots"
)

// Sweep measures impls over sizes (or, with Blocks, over block sizes at
// one size) and shows a table and a figure against the measured ceiling.
type Sweep struct {
	Title  string   // the figure's title, before ", <GPU>": e.g. "Vector add bandwidth"
	Impls  []string // nil: every impl of the problem
	Sizes  []Size
	Blocks []int  // if set, the x axis is threads per block, at Sizes[0]
	XLabel string // with its unit, e.g. "elements (n)"
	XDim   int    // which number of a size the x axis shows: the first (0) unless set

	Problem *Problem // nil: the lesson's
	Memory  bool     // also draw the device memory each point took
	// Extra, with Memory, draws what each point took beyond what its case
	// set up (Result.ExtraMem), with ExtraLabel saying what that is, e.g.
	// "beyond Q, K and V": the memory an algorithm itself costs.
	Extra      bool
	ExtraLabel string
	Ladder     bool // also draw each impl's share of the library impl, as bars, at the largest size
	// ProfileSizes, if set, are the sizes `profile` runs the sweep's impls
	// at, a row each; else a ladder's largest size, and a sweep of a
	// problem no ladder covers at its largest size within 1 GiB.
	ProfileSizes []Size

	// Rounds is how many times each point is measured, round-robin: the
	// first round measures every point, the second every point again, and
	// so on, so that an impl and its baseline are measured close in time
	// in every round and a ratio between them is the median of the rounds'
	// ratios (RatioOf), which a baseline that moves between runs does not
	// move. 0 means 3 for a Ladder sweep, whose bars are such ratios, and
	// 1 otherwise; View.Rounds overrides it.
	Rounds int
}

// rounds is how many rounds s is measured in, in env.
func (s *Sweep) rounds(env *Env) int {
	switch {
	case env.Rounds > 0:
		return env.Rounds
	case s.Rounds > 0:
		return s.Rounds
	case s.Ladder:
		return 3
	}
	return 1
}

// Kind is "sweep".
func (*Sweep) Kind() string { return "sweep" }

// Do runs the sweep live, or replays the recorded one, and draws it.
func (s *Sweep) Do(env *Env, l *Lesson, step string) error {
	rs, err := env.LiveOr(func() ([]Result, error) { return s.measure(env, l, step) },
		func() ([]Result, error) { return env.replayed(l, step), nil })
	if len(rs) > 0 {
		if serr := s.draw(env, l, step, rs); err == nil {
			err = serr
		}
	}
	return err
}

// problems returns the problem it measures, the lesson's where it names
// none.
func (s *Sweep) problems(l *Lesson) []*Problem {
	if p, err := problemOf(l, s.Problem); err == nil {
		return []*Problem{p}
	}
	return nil
}

// swept returns the problem, impls, sizes and block sizes it measures.
func (s *Sweep) swept() sweepShape { return sweepShape{s.Problem, s.Impls, s.Sizes, s.Blocks} }

// figures names the figures it draws: the step's, and its memory and its
// ladder where it draws them.
func (s *Sweep) figures(step string) []string {
	names := []string{step}
	if s.Memory {
		names = append(names, step+" memory")
	}
	if s.Ladder {
		names = append(names, step+" ladder")
	}
	return names
}

type point struct {
	impl  Impl
	size  Size
	block int
}

func (s *Sweep) points(env *Env, p *Problem) ([]point, error) {
	impls, err := p.impls(s.Impls)
	if err != nil {
		return nil, err
	}
	var pts []point
	for _, im := range impls {
		if len(s.Blocks) > 0 {
			blocks := s.Blocks
			if len(env.Blocks) > 0 {
				blocks = env.Blocks
			}
			for _, b := range blocks {
				if err := ValidBlock(b); err != nil {
					return nil, err
				}
				pts = append(pts, point{im, s.Sizes[0], b})
			}
			continue
		}
		sizes := s.Sizes
		if len(env.Sizes) > 0 {
			sizes = env.Sizes
			for _, sz := range sizes {
				if len(sz) != len(s.Sizes[0]) {
					return nil, fmt.Errorf("lessons: a size of %s has %d numbers, like %s, not %d (%s)",
						p.Name, len(s.Sizes[0]), strings.ReplaceAll(s.Sizes[0].String(), "×", "x"), len(sz), sz)
				}
			}
		}
		for _, sz := range sizes {
			pts = append(pts, point{im, sz, im.block()})
		}
	}
	return pts, nil
}

// measure measures every point in each round, in turn, as Rounds says.
func (s *Sweep) measure(env *Env, l *Lesson, step string) ([]Result, error) {
	p, err := problemOf(l, s.Problem)
	if err != nil {
		return nil, err
	}
	pts, err := s.points(env, p)
	if err != nil {
		return nil, err
	}
	rounds := s.rounds(env)
	total := rounds * len(pts)
	t := &tally{taken: make([][]Result, len(pts)), broke: map[string]string{}}
	keep := s.keeper(env, rounds)
	defer keep.release()
	for round := 1; round <= rounds; round++ {
		// Each round compares its points with the ceiling of that round.
		ceiling := env.ceilingOnce(p.Ceiling, rounds > 1)
		for i, pt := range pts {
			done := (round-1)*len(pts) + i
			if env.canceled() != nil {
				env.printf("stopped after %d of %d measurements\n", done, total)
				return t.out, ErrStopped
			}
			if round > 1 && (len(t.taken[i]) < round-1 || t.broke[pt.impl.Name] != "") {
				continue // it has what it will have
			}
			if why := t.broke[pt.impl.Name]; why != "" {
				t.out = append(t.out, env.skip(benchResult(l, p, step, pt.impl, pt.size, pt.block), why))
				continue
			}
			env.progress(done, total, pt.what(round, rounds))
			k, err := env.implKernel(l, p, pt.impl)
			if err != nil {
				return t.out, err
			}
			r, err := benchRound(env, l, p, step, pt.impl, k, pt.size, pt.block, ceiling, round, keep.at(i))
			t.add(env, i, round, rounds, r, err)
		}
	}
	env.progress(total, total, "")
	if t.first == nil {
		t.first = nothingFit(t.out)
	}
	return t.out, t.first
}

// tally is what a sweep has measured so far.
type tally struct {
	out   []Result          // each point's result, over the rounds it has so far
	taken [][]Result        // each point's measured rounds, where there are several
	broke map[string]string // impl → why its remaining points are not measured
	first error
}

// add takes r, the result of point i in round round of rounds, and err,
// what measuring it returned, and records the point's result. A later
// round keeps a point's earlier rounds where it did not run (out of
// memory, say), but where it failed the failure replaces them, and the
// point and the later points of its impl are not measured again.
func (t *tally) add(env *Env, i, round, rounds int, r Result, err error) {
	switch {
	case r.Measured() && r.Passed && rounds > 1:
		t.taken[i] = append(t.taken[i], r)
		r = overRounds(t.taken[i])
	case round > 1 && !r.Failed():
		r = t.out[i]
	}
	env.record(r)
	if round == 1 {
		t.out = append(t.out, r)
	} else {
		t.out[i] = r
	}
	if err != nil && t.first == nil {
		t.first = err
	}
	if why := breaks(r); why != "" {
		t.broke[r.Variant] = why
	}
}

// what says what measuring pt is, for progress: in which round, where
// there are several.
func (pt point) what(round, rounds int) string {
	what := fmt.Sprintf("%s %s block %d", pt.impl.Name, pt.size, pt.block)
	if rounds > 1 {
		what = fmt.Sprintf("round %d of %d: %s", round, rounds, what)
	}
	return what
}

// overRounds is a point's result over the rounds it was measured in, in
// order: the median round's (by throughput), with every round's
// throughput in Rounds and ceiling in CeilingRounds, the median ceiling,
// what the GPU reported across them all, and the most memory any took.
func overRounds(rounds []Result) Result {
	tps, ceils := make([]float64, len(rounds)), make([]float64, len(rounds))
	var cond gpu.Conditions
	for i, r := range rounds {
		tps[i], ceils[i] = r.Throughput, r.Ceiling
		if r.Conditions != nil {
			cond = cond.Merge(*r.Conditions)
		}
	}
	mid := median(tps)
	out := rounds[slices.Index(tps, mid)]
	for _, r := range rounds {
		out.PeakMem, out.ExtraMem = max(out.PeakMem, r.PeakMem), max(out.ExtraMem, r.ExtraMem)
	}
	out.Rounds = tps
	if slices.Min(ceils) > 0 { // a problem with a ceiling has one in every round
		out.Ceiling, out.CeilingRounds = median(ceils), ceils
	}
	if cond.Samples > 0 {
		out.Conditions = &cond
	}
	return out
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

// benchPoint measures impl at size s with block threads per block: checked
// before timing and again after, timed with the L2 flushed between
// repetitions when the case would otherwise sit in L2. ceiling is called
// once a point actually runs, so that a sweep whose sizes are all refused
// measures nothing.
func benchPoint(env *Env, l *Lesson, p *Problem, step string, impl Impl, k gpu.Kernel, s Size, block int, ceiling func() (Result, error)) (Result, error) {
	return benchRound(env, l, p, step, impl, k, s, block, ceiling, 1, nil)
}

// benchRound is benchPoint in round round (from 1) of a sweep measured in
// rounds. After the first, which checked the point before timing and
// after, a round sets the case up again and only times it: the checks
// cost a run and a comparison on the CPU, and would say again what the
// first round said.
func benchRound(env *Env, l *Lesson, p *Problem, step string, impl Impl, k gpu.Kernel, s Size, block int, ceiling func() (Result, error), round int, slot *keptSlot) (Result, error) {
	r := benchResult(l, p, step, impl, s, block)
	env.stamp(&r)
	if slot != nil && slot.c != nil {
		// A later round of a point whose case was kept: set up and
		// checked in round 1, it is only timed again.
		r.Block = launchedBlock(slot.ops, k, r.Block)
		return benchKept(env, p, impl, s, ceiling, slot, r)
	}
	r, ok := env.before(p, impl, s, r)
	if !ok {
		return r, nil
	}
	if err := references(env, p, impl, ceiling, &r); err != nil {
		return r, err
	}
	free0, _, _ := env.Dev.MemInfo()
	c, err := p.Setup(env, s)
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	kept := false
	defer func() {
		if !kept {
			c.Free()
		}
	}()
	freeSetup, _, _ := env.Dev.MemInfo()
	ops, err := c.Ops(p.launchAs(impl), k, block)
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	r.Block = launchedBlock(ops, k, r.Block)
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
	if round == 1 {
		if err := check("before"); err != nil {
			return r, failure(&r, p, impl, s, err)
		}
	}
	held()
	if r.PeakMem <= 0 {
		r.PeakMem = footprint
	}
	t, err := env.Dev.Bench(timing(env, p, impl, s, ops))
	if err != nil {
		return r, failure(&r, p, impl, s, err)
	}
	if round == 1 {
		// The timed runs rewrote the outputs: check those, then the whole again.
		if _, err := c.Check(); err != nil {
			return r, failure(&r, p, impl, s, fmt.Errorf("after timing: %w", err))
		}
	}
	r = timed(p, s, r, t)
	kept = slot.keep(c, ops, r.PeakMem)
	return r, nil
}

// launchedBlock is the threads per block that ops launch kernel k with,
// where every launch of k in them has the same: a case may choose its own
// launch by the size (softmax_v5 gives a row of 32768 columns a block of
// 1024 threads), and the table shows the launch that ran. It is block,
// the launch asked for, for a library impl (block 0) and where ops launch
// k in no one way.
func launchedBlock(ops []gpu.Op, k gpu.Kernel, block int) int {
	if block == 0 || k.Name == "" {
		return block
	}
	threads := 0
	for _, op := range ops {
		var l gpu.Launch
		switch op := op.(type) {
		case gpu.Launch:
			l = op
		case *gpu.Launch:
			l = *op
		default:
			continue
		}
		if l.Kernel.Name != k.Name {
			continue
		}
		if threads != 0 && l.Block.Count() != threads {
			return block
		}
		threads = l.Block.Count()
	}
	if threads == 0 {
		return block
	}
	return threads
}

// references gives r what it is shown against: the ceiling, where p has
// one (ceiling measures it once a round), and the GPU's peak for impl.
func references(env *Env, p *Problem, impl Impl, ceiling func() (Result, error), r *Result) error {
	if p.Ceiling != "" {
		ceil, err := ceiling()
		if err != nil {
			return err
		}
		r.Ceiling, r.CeilingName = ceil.Throughput, ceil.Variant
	}
	r.Peak, r.PeakName, r.PeakSource = p.peak(impl, env.Dev.Info())
	return nil
}

// timing is the Bench that times ops, impl's work at size s: the L2
// flushed between repetitions where the run would otherwise find its data
// there (flushes).
func timing(env *Env, p *Problem, impl Impl, s Size, ops []gpu.Op) gpu.Bench {
	return gpu.Bench{Name: fmt.Sprintf("%s %s", impl.Name, s), Ops: [][]gpu.Op{ops},
		FlushL2: flushes(p, impl, s, env.Dev.Info().L2Bytes), Reps: repsFor(p.Work(s))}
}

// flushes says whether impl's runs at size s are timed with the L2 (of
// l2 bytes) flushed before each: where the device memory a run touches
// fits in 4× L2, part of it would still be there from the run before.
// That memory is the impl's Footprint, or all that the case holds.
func flushes(p *Problem, impl Impl, s Size, l2 int64) bool {
	touched := p.Memory(s).Device
	if impl.Footprint != nil {
		touched = impl.Footprint(s)
	}
	return touched < 4*l2
}

// timed is r with the times, the rate and the GPU's conditions of t.
func timed(p *Problem, s Size, r Result, t gpu.Timing) Result {
	st := t.Stats()
	r = r.WithTimes(st)
	if t.Conditions.Samples > 0 {
		r.Conditions = &t.Conditions
	}
	r.Throughput = p.units(st.Rate(p.Work(s)))
	r.Passed = true
	return r
}

// benchKept times a kept case again, against this round's ceiling.
func benchKept(env *Env, p *Problem, impl Impl, s Size, ceiling func() (Result, error), slot *keptSlot, r Result) (Result, error) {
	if err := references(env, p, impl, ceiling, &r); err != nil {
		return r, err
	}
	t, err := env.Dev.Bench(timing(env, p, impl, s, slot.ops))
	if err != nil {
		slot.drop()
		if errors.As(err, new(*gpu.WorkerError)) {
			// A fresh worker holds none of the kept cases' memory: the
			// later rounds set their points up again.
			slot.k.release()
		}
		return r, failure(&r, p, impl, s, err)
	}
	r = timed(p, s, r, t)
	r.PeakMem = slot.bytes
	return r, nil
}

// keeper keeps the cases of a sweep measured in rounds from round 1 to the
// last, up to a budget of device memory, so that a later round times a
// point again without setting it up again (its inputs, its CPU reference):
// the setup is most of the time of a large point. A point beyond the
// budget is set up again each round.
type keeper struct {
	budget, held int64
	slots        map[int]*keptSlot
}

// keptSlot is one point's kept case, nil c where none is kept.
type keptSlot struct {
	k     *keeper
	c     Case
	ops   []gpu.Op
	bytes int64
}

// keeper returns the keeper of a sweep measured in rounds in env: half the
// device memory free now, or nothing kept (a nil keeper) for one round, or
// for a sweep that draws the memory each point takes, whose sizes are
// refused by what is free, which kept cases would take.
func (s *Sweep) keeper(env *Env, rounds int) *keeper {
	if rounds < 2 || s.Memory {
		return nil
	}
	free, _, err := env.Dev.MemInfo()
	if err != nil || free <= 0 {
		return nil
	}
	return &keeper{budget: free / 2, slots: map[int]*keptSlot{}}
}

// at is point i's slot; nil for a nil keeper.
func (k *keeper) at(i int) *keptSlot {
	if k == nil {
		return nil
	}
	if k.slots[i] == nil {
		k.slots[i] = &keptSlot{k: k}
	}
	return k.slots[i]
}

// keep keeps c, whose ops are ops and which holds bytes of device memory,
// where the budget allows, and says whether it did (the caller then does
// not free it).
func (sl *keptSlot) keep(c Case, ops []gpu.Op, bytes int64) bool {
	if sl == nil || sl.c != nil || sl.k.held+bytes > sl.k.budget {
		return false
	}
	sl.c, sl.ops, sl.bytes = c, ops, bytes
	sl.k.held += bytes
	return true
}

// drop frees the slot's case.
func (sl *keptSlot) drop() {
	if sl.c != nil {
		sl.c.Free()
		sl.k.held -= sl.bytes
		sl.c, sl.ops = nil, nil
	}
}

// release frees every kept case.
func (k *keeper) release() {
	if k == nil {
		return
	}
	for _, sl := range k.slots {
		sl.drop()
	}
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

// nothingFit is the first out-of-memory refusal of rs when nothing in rs
// was measured: a sweep asked only for sizes that do not fit has failed,
// while one whose largest sizes run out has shown where the limit is.
func nothingFit(rs []Result) error {
	var oom *Result
	for i, r := range rs {
		if r.Measured() {
			return nil
		}
		if r.Outcome == OutOfMemory && oom == nil {
			oom = &rs[i]
		}
	}
	if oom == nil {
		return nil
	}
	return errors.New(oom.Detail)
}

// draw prints the table and the terminal chart of rs and saves the
// figures, named as figures names them.
func (s *Sweep) draw(env *Env, l *Lesson, step string, rs []Result) error {
	p, err := problemOf(l, s.Problem)
	if err != nil {
		return err
	}
	rs = env.withPeaks(p, rs)
	if len(s.Blocks) == 0 {
		rs = launchedOnly(rs)
	}
	env.printf("%s · %s\n", p.Name, ResultSet{Results: rs}.Source()) // the source names the GPU
	env.PrintTable(benchTable(p, rs))
	if c := conditionsOf(rs); c.Samples > 0 {
		env.printf("While it ran: %s.\n", c)
	}
	if len(measuredOnly(rs)) == 0 {
		return nil // nothing to draw; the table says why
	}
	styles := seriesStyles(l)
	figs := []plots.Figure{styled(s.Figure(p, rs), styles)}
	if s.Memory {
		mem := s.MemoryFigure(p, rs)
		if info, ok := env.deviceNamed(rs[0].GPU); ok && nearDeviceMemory(rs, info.GlobalMem) {
			mem.Ceilings = append(mem.Ceilings, plots.Ceiling{Name: fmt.Sprintf("device memory, %s: what a size can hold at most", mibLabel(info.GlobalMem)),
				Value: float64(info.GlobalMem) / (1 << 20), Peak: true})
		}
		figs = append(figs, styled(mem, styles))
	}
	if s.Ladder {
		if bars, ok := LadderBars(p, rs); ok {
			figs = append(figs, bars) // the last figure: a ladder without bars leaves no gap in the names
		}
	}
	names := s.figures(step)
	for i, fig := range figs {
		if err := env.Figure(l, names[i], fig); err != nil {
			return err
		}
	}
	return nil
}

// nearDeviceMemory reports whether the device's memory, total bytes,
// belongs in the memory figure of rs: where a size ran out of it, or a
// point held a tenth of it or more. Far above every point it would only
// stretch the axis away from them.
func nearDeviceMemory(rs []Result, total int64) bool {
	if total <= 0 {
		return false
	}
	for _, r := range rs {
		if r.Outcome == OutOfMemory || r.PeakMem >= total/10 {
			return true
		}
	}
	return false
}

// launchedOnly returns rs with no block for the points that never
// launched (refused, out of memory, skipped): the table's block column
// shows the launch that ran.
func launchedOnly(rs []Result) []Result {
	out := make([]Result, len(rs))
	for i, r := range rs {
		out[i] = r
		switch r.Outcome {
		case Refused, OutOfMemory, Skipped:
			out[i].Block = 0
		}
	}
	return out
}

// seriesStyles gives each series the lesson's figures draw one Style for
// the whole lesson, so that a series has one colour and one marker in all
// of them. Series drawn together as lines (by a step's sweep, or recorded
// for one step at several sizes) get different colours and markers, where
// there are enough. Taken in the order of their first step, each gets the
// first colour free among those it is drawn beside, and the first marker
// free among them that no other series of the lesson has, or failing
// that, none has with that colour.
func seriesStyles(l *Lesson) map[string]plots.Style {
	mates := map[string]map[string]bool{}
	var order []string
	for _, names := range figureGroups(l) {
		for _, a := range names {
			if mates[a] == nil {
				mates[a] = map[string]bool{}
				order = append(order, a)
			}
			for _, b := range names {
				if a != b {
					mates[a][b] = true
				}
			}
		}
	}
	styles := map[string]plots.Style{}
	used := map[plots.Style]bool{}
	var marked [plots.Styles]bool // markers some series of the lesson has
	for i, name := range order {
		var colours, markers [plots.Styles]bool
		for m := range mates[name] {
			if st, ok := styles[m]; ok {
				colours[st.Colour%plots.Styles], markers[st.Marker%plots.Styles] = true, true
			}
		}
		st := plots.Style{Colour: firstFree(colours[:], i)}
		// A terminal has markers and no colours: a marker no other series
		// of the lesson has, where one is left; else one that, with the
		// colour, no other series has.
		st.Marker = firstFree(markers[:], i,
			func(m int) bool { return marked[m] },
			func(m int) bool { return used[plots.Style{Colour: st.Colour, Marker: m}] })
		styles[name], used[st], marked[st.Marker] = st, true, true
	}
	return styles
}

// figureGroups returns the variants each step of l draws together as
// lines, in the order of the steps: a sweep's over several sizes, and
// those recorded for a step at several sizes (a sweep a Run measures);
// then each variant of the lesson's problem on its own, as a learner's
// bench may draw one that no step draws. A sweep at one size draws bars
// of one colour: it styles no series, and takes no colour from those
// drawn as lines.
func figureGroups(l *Lesson) [][]string {
	impls := lessonImpls(l)
	var groups [][]string
	for _, st := range l.Steps {
		var names []string
		if sw, ok := sweepOf(st.Action); ok {
			shape := sw.swept()
			names = shape.impls
			if p, err := problemOf(l, shape.problem); names == nil && err == nil {
				for _, im := range p.Impls {
					names = append(names, im.Name)
				}
			}
			if len(shape.sizes) == 1 && len(shape.blocks) == 0 {
				names = nil
			}
		}
		if rs := l.recorded.Filter(st.Title, "bench"); !oneSize(rs) {
			for _, r := range rs {
				if impls[r.Variant] && !slices.Contains(names, r.Variant) {
					names = append(names, r.Variant)
				}
			}
		}
		groups = append(groups, names)
	}
	if l.Problem != nil {
		for _, im := range l.Problem.Impls {
			groups = append(groups, []string{im.Name})
		}
	}
	return groups
}

// lessonImpls is the names of the variants of l's problems: what else a
// step records (the parts of a time, a timeline's lanes) is no series.
func lessonImpls(l *Lesson) map[string]bool {
	var problems []*Problem
	if l.Problem != nil {
		problems = append(problems, l.Problem)
	}
	for _, st := range l.Steps {
		problems = append(problems, problemsOf(st.Action, l)...)
	}
	impls := map[string]bool{}
	for _, p := range problems {
		for _, im := range p.Impls {
			impls[im.Name] = true
		}
	}
	return impls
}

// firstFree is the first index not taken and not avoided by any of avoid;
// failing that, not avoided by the later of them, and so on, down to the
// first not taken. Where every index is taken, it is i (wrapped).
func firstFree(taken []bool, i int, avoid ...func(int) bool) int {
	for from := 0; from <= len(avoid); from++ {
		for j, t := range taken {
			if !t && !slices.ContainsFunc(avoid[from:], func(a func(int) bool) bool { return a(j) }) {
				return j
			}
		}
	}
	return i % len(taken)
}

// styled returns f with each series' style from styles, where it has one:
// a figure of lines only; bars are coloured by their series.
func styled(f plots.Figure, styles map[string]plots.Style) plots.Figure {
	lines, ok := f.(plots.Lines)
	if !ok {
		return f
	}
	lines.Series = slices.Clone(lines.Series)
	for i, se := range lines.Series {
		if st, ok := styles[se.Name]; ok {
			lines.Series[i].Style = &st
		}
	}
	return lines
}

// mibLabel writes bytes in GiB, or in MiB below one GiB.
func mibLabel(bytes int64) string {
	if bytes >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(bytes)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20))
}

// LadderBars draws each kernel's throughput as a share of the library
// impl's at the largest size measured, or of the measured ceiling where the
// problem has no library impl; ok is false with neither.
func LadderBars(p *Problem, rs []Result) (plots.Bars, bool) {
	rs = measuredOnly(rs)
	if len(rs) == 0 {
		return plots.Bars{}, false
	}
	largest := rs[0].Dims
	for _, r := range rs {
		if r.Dims[0] > largest[0] {
			largest = r.Dims
		}
	}
	size := Size(largest).String()
	var lib *Result
	for i, r := range rs {
		if im, _ := p.impl(r.Variant); im.Library && Size(r.Dims).String() == size {
			lib = &rs[i]
		}
	}
	ceiling := lib == nil
	if ceiling {
		// No library: measure against the ceiling measured beside the
		// kernels (the copy, for a memory-bound problem).
		for _, r := range rs {
			if r.Ceiling > 0 && Size(r.Dims).String() == size {
				c := ceilingOf(r)
				lib = &c
				break
			}
		}
	}
	if lib == nil || lib.Throughput == 0 {
		return plots.Bars{}, false
	}
	b := plots.Bars{
		Title:    fmt.Sprintf("%s at %s, %% of %s, %s", p.Name, size, lib.Variant, lib.GPU),
		Subtitle: ResultSet{Results: rs}.Source(),
		YLabel:   "% of " + lib.Variant,
		Series:   []plots.BarSeries{{Name: size}},
		Ceilings: []plots.Ceiling{{Name: fmt.Sprintf("%s, %.1f %s", lib.Variant, lib.Throughput, lib.Unit), Value: 100}},
	}
	rounds := 0
	for _, im := range p.Impls {
		for _, r := range rs {
			if r.Variant == im.Name && !im.Library && Size(r.Dims).String() == size {
				base := *lib
				if c := ceilingOf(r); ceiling && c.Throughput > 0 {
					base = c // the ceiling of r's own rounds
				}
				q := RatioOf(r, base)
				b.Groups = append(b.Groups, r.Variant)
				b.Series[0].Values = append(b.Series[0].Values, 100*q.Median)
				rounds = max(rounds, q.Rounds)
			}
		}
	}
	if rounds > 1 {
		b.Subtitle += fmt.Sprintf(" · each bar the median of %d rounds' ratios", rounds)
	}
	return b, len(b.Groups) > 0
}

func measuredOnly(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Measured() {
			out = append(out, r)
		}
	}
	return out
}

// MemoryFigure draws the device memory each point held against its size,
// on log axes, a line per impl; a size that did not fit is a cross at the
// memory it would have needed, labelled so. The sweep's draw adds the
// device's memory as a line, which that need passes.
func (s *Sweep) MemoryFigure(p *Problem, rs []Result) plots.Lines {
	if s.Extra {
		// Where a size did not fit, the cross is at what the impl would
		// have needed beyond the problem's own memory.
		fig := s.lines(p, rs, func(r Result) float64 { return float64(r.ExtraMem) / (1 << 20) },
			func(r Result) float64 {
				im, _ := p.impl(r.Variant)
				if im.Extra == nil {
					return 0
				}
				return float64(im.Extra(r.Dims)) / (1 << 20)
			})
		fig.Title = fmt.Sprintf("%s: device memory %s, %s", p.Name, s.ExtraLabel, rs[0].GPU)
		fig.YLabel, fig.LogY = "device memory "+s.ExtraLabel+" (MiB)", true
		return fig
	}
	fig := s.lines(p, rs, func(r Result) float64 { return float64(r.PeakMem) / (1 << 20) },
		func(r Result) float64 { return float64(r.NeedMem) / (1 << 20) })
	fig.Title = fmt.Sprintf("%s: device memory held, inputs and outputs included, %s", p.Name, rs[0].GPU)
	fig.YLabel, fig.LogY = "device memory held (MiB)", true
	return fig
}

// Figure draws rs: throughput against size (or block size), a line per
// impl in the problem's order, and the measured ceiling dashed. A sweep at
// one size draws bars, one per impl. A size that did not fit is marked
// across the figure at that size, as no value (plots.Series.OutOfMemory).
func (s *Sweep) Figure(p *Problem, rs []Result) plots.Figure {
	// The references: each peak of the results (one per precision), and
	// for a memory-bound problem the copy measured in the same run; a
	// library baseline is a series of its own.
	ceiling := func() []plots.Ceiling {
		var cs []plots.Ceiling
		seen := map[string]bool{}
		for _, r := range rs {
			if !r.Measured() {
				continue
			}
			if r.Peak > 0 && !seen[r.PeakName] {
				seen[r.PeakName] = true
				name, _, _ := strings.Cut(r.PeakName, ",")
				label := fmt.Sprintf("%s, %.0f %s", name, r.Peak, r.Unit)
				if r.PeakSource != "" { // recorded before results said, on a GPU no longer known: no label
					label += " (" + peakSourceLabel(r.PeakSource) + ")"
				}
				cs = append(cs, plots.Ceiling{Name: label, Value: r.Peak, Peak: true})
			}
			if p.Ceiling != "" && r.Ceiling > 0 && !seen["baseline"] {
				seen["baseline"] = true
				cs = append(cs, plots.Ceiling{Name: fmt.Sprintf("%s, %.0f %s (measured)", r.CeilingName, r.Ceiling, r.Unit), Value: r.Ceiling})
			}
		}
		return cs
	}
	if len(s.Blocks) == 0 && oneSize(rs) {
		b := plots.Bars{
			Title:    fmt.Sprintf("%s at %s, %s", s.Title, rs[0].Size, rs[0].GPU),
			Subtitle: ResultSet{Results: rs}.Source(),
			YLabel:   rs[0].Unit, Series: []plots.BarSeries{{Name: rs[0].Size}}, Ceilings: ceiling(),
		}
		for _, im := range p.Impls {
			for _, r := range rs {
				if r.Variant == im.Name && r.Measured() {
					b.Groups = append(b.Groups, r.Variant)
					b.Series[0].Values = append(b.Series[0].Values, r.Throughput)
				}
			}
		}
		return b
	}
	fig := s.lines(p, rs, func(r Result) float64 { return r.Throughput }, func(Result) float64 { return 0 })
	fig.Ceilings = ceiling()
	return fig
}

// peakSourceLabel says in a figure's legend where a peak comes from.
func peakSourceLabel(source string) string {
	if source == gpu.SourceNominal {
		return "nominal: the link's generation and width, read from sysfs"
	}
	return source
}

// oneSize reports whether every result of rs is at one size.
func oneSize(rs []Result) bool {
	for _, r := range rs {
		if r.Size != rs[0].Size {
			return false
		}
	}
	return true
}

// lines plots y of each measured result against its size (or block size),
// a line per impl in the problem's order; a size out of memory is a point
// of the impl's OutOfMemory, at oomY.
func (s *Sweep) lines(p *Problem, rs []Result, y, oomY func(Result) float64) plots.Lines {
	fig := plots.Lines{
		Title:    fmt.Sprintf("%s, %s", s.Title, rs[0].GPU),
		Subtitle: ResultSet{Results: rs}.Source(),
		XLabel:   s.XLabel, YLabel: rs[0].Unit,
	}
	if len(s.Blocks) > 0 {
		fig.XLabel = "threads per block"
		fig.Title += fmt.Sprintf(" (%s)", rs[0].Size)
	}
	order := map[string]int{}
	for i, im := range p.Impls {
		order[im.Name] = i
	}
	bySeries := map[string]*plots.Series{}
	var names []string
	var xs []float64 // of the points measured
	for _, r := range rs {
		if !r.Measured() && r.Outcome != OutOfMemory {
			continue
		}
		se, ok := bySeries[r.Variant]
		if !ok {
			im, _ := p.impl(r.Variant)
			se = &plots.Series{Name: r.Variant, Baseline: drawnAsBaseline(p, im)}
			bySeries[r.Variant] = se
			names = append(names, r.Variant)
		}
		x := float64(r.Dims[min(s.XDim, len(r.Dims)-1)])
		if len(s.Blocks) > 0 {
			x = float64(r.Block)
		}
		if r.Outcome == OutOfMemory {
			o := plots.Point{X: x, Y: oomY(r)}
			if o.Y > 0 {
				o.Label = "would need " + mibLabel(int64(o.Y*(1<<20)))
			}
			se.OutOfMemory = append(se.OutOfMemory, o)
			continue
		}
		se.X = append(se.X, x)
		se.Y = append(se.Y, y(r))
		xs = append(xs, x)
	}
	sort.SliceStable(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
	for _, n := range names {
		fig.Series = append(fig.Series, *bySeries[n])
	}
	fig.LogX = logX(xs)
	return fig
}

// logX reports whether sizes xs read better on a log axis: where they are
// powers of two (as sizes are chosen here), or span 16× or more. Sizes a
// step apart over a short range (1000 to 4000 rounds) read on a linear one.
func logX(xs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	powers := true
	for _, x := range xs {
		if x <= 0 {
			return false
		}
		lo, hi = math.Min(lo, x), math.Max(hi, x)
		if e := math.Round(math.Log2(x)); math.Pow(2, e) != x {
			powers = false
		}
	}
	return powers || hi/lo >= 16
}

// drawnAsBaseline reports whether impl of p is drawn as a baseline (dashed,
// hollow markers): a library's result among kernels. Where every impl of
// p is a library call (lesson 3's copies, lesson 13's chains), none is.
func drawnAsBaseline(p *Problem, impl Impl) bool {
	if !impl.Library {
		return false
	}
	for _, im := range p.Impls {
		if !im.Library {
			return true
		}
	}
	return false
}
