package lessons

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cudarepl/gpu"
	"cudarepl/gpu/profiler"
	"cudarepl/kernels"
	"cudarepl/nvrtc"
)

// A profile says why a version is as fast as it is: Nsight Compute's
// hardware counters for one run of each version of a ladder, a row each.
// Profile measures them where ncu is installed; a lesson's ProfileStep
// shows them beside the claim they support, from this session or, without
// a GPU, as recorded with the lesson (results of kind "profile").

// ProfileOptions says what Profile measures.
type ProfileOptions struct {
	// Variants narrows the profile to these versions and libraries; all of
	// each ladder when nil.
	Variants []string
	// Step, if set (from 1), profiles only that sweep step.
	Step int
	// Mine, if set, is a learner's kernel file, profiled beside the
	// version it is judged like (Submission.Like, the exercise's when
	// empty), at the exercise's size.
	Mine *Submission
}

// profileMaxBytes bounds the device memory of a sweep's size picked for
// its profile: Nsight Compute saves and restores what a kernel writes
// between its passes, and the counters say the same at any size that
// fills the GPU.
const profileMaxBytes = 1 << 30

// profileTarget is one table of a profile: a sweep step's problem, the
// impls to profile and the sizes to profile them at.
type profileTarget struct {
	step  string
	p     *Problem
	impls []Impl
	sizes []Size
	asked bool // the sweep names its ProfileSizes, or the caller its step
}

// profileTargets returns what Profile measures in l: each ladder sweep at
// its largest size, then, of each problem no ladder covers, the sweep that
// measures the most impls, and every sweep that names its ProfileSizes;
// narrowed to o's step and variants (each of which must be a variant of
// l).
func (l *Lesson) profileTargets(o ProfileOptions) ([]profileTarget, error) {
	for _, v := range o.Variants {
		if !slices.ContainsFunc(l.Variants(), func(im Impl) bool { return im.Name == v }) {
			return nil, &NotFoundError{fmt.Sprintf("%s has no variant %s to profile (it has: %s)", l.Slug, v, variantNames(l))}
		}
	}
	var ladders, others []profileTarget
	for i, st := range l.Steps {
		sw, ok := st.Action.(*Sweep)
		if !ok || o.Step != 0 && o.Step != i+1 {
			continue
		}
		p, err := problemOf(l, sw.Problem)
		if err != nil {
			return nil, err
		}
		impls, err := p.impls(sw.Impls)
		if err != nil {
			return nil, err
		}
		t := profileTarget{step: st.Title, p: p, impls: impls, sizes: sw.profileSizes(p, impls), asked: sw.ProfileSizes != nil || o.Step != 0}
		if len(impls) == 0 || len(t.sizes) == 0 {
			continue
		}
		if sw.Ladder {
			ladders = append(ladders, t)
		} else {
			others = append(others, t)
		}
	}
	// The sweeps are chosen on their whole impls, then narrowed to the
	// variants asked for: naming one variant profiles the rows the whole
	// profile would have, not those of another sweep of it.
	chosen := ladders
	for _, t := range others {
		covered := slices.ContainsFunc(chosen, func(u profileTarget) bool { return u.p == t.p })
		wider := !slices.ContainsFunc(others, func(u profileTarget) bool { return u.p == t.p && len(u.impls) > len(t.impls) })
		if t.asked || !covered && wider {
			chosen = append(chosen, t)
		}
	}
	var out []profileTarget
	for _, t := range chosen {
		if o.Variants != nil {
			t.impls = slices.DeleteFunc(slices.Clone(t.impls), func(im Impl) bool { return !slices.Contains(o.Variants, im.Name) })
		}
		if len(t.impls) > 0 {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		switch {
		case o.Step != 0 && len(chosen) > 0:
			return nil, &NotFoundError{fmt.Sprintf("step %d of %s does not run %s", o.Step, l.Slug, strings.Join(o.Variants, ", "))}
		case o.Step != 0:
			return nil, &NotFoundError{fmt.Sprintf("step %d of %s is not a sweep of kernels to profile", o.Step, l.Slug)}
		case o.Variants != nil:
			return nil, &NotFoundError{fmt.Sprintf("no sweep of %s that profile runs has %s", l.Slug, strings.Join(o.Variants, ", "))}
		}
		return nil, fmt.Errorf("lessons: %s has no sweep of kernels to profile", l.Slug)
	}
	return out, nil
}

// variantNames lists l's variants for messages.
func variantNames(l *Lesson) string {
	var names []string
	for _, im := range l.Variants() {
		names = append(names, im.Name)
	}
	return strings.Join(names, ", ")
}

// profileSizes are the sizes a profile of s runs: ProfileSizes, or the
// largest of its sizes at which every impl takes at most profileMaxBytes
// of device memory (its smallest where there is none).
func (s *Sweep) profileSizes(p *Problem, impls []Impl) []Size {
	if s.ProfileSizes != nil {
		return s.ProfileSizes
	}
	if len(s.Sizes) == 0 {
		return nil
	}
	if s.Blocks != nil {
		return s.Sizes[:1]
	}
	var best Size
	for _, sz := range s.Sizes {
		small := p.Memory == nil || !slices.ContainsFunc(impls, func(im Impl) bool { return p.need(im, sz).Device > profileMaxBytes })
		if small && (best == nil || p.Work(sz) > p.Work(best)) {
			best = sz
		}
	}
	if best == nil {
		best = slices.MinFunc(s.Sizes, func(a, b Size) int { return cmp.Compare(p.Work(a), p.Work(b)) })
	}
	return []Size{best}
}

// Profile runs each ladder of l (narrowed by o) once a version under
// Nsight Compute, and shows a memory table and a compute table per ladder;
// without a GPU it shows the profiles recorded with the lesson. What it
// measures is recorded (kind "profile"), for bench's JSON and the lesson's
// ProfileSteps.
func (e *Env) Profile(l *Lesson, o ProfileOptions) error {
	_, err := e.LiveOr(func() ([]Result, error) { return nil, e.profileLive(l, o) },
		func() ([]Result, error) { return nil, e.replayProfiles(l, o) })
	return err
}

// profileLive profiles on this session's GPU. A row whose kernels the
// report lacks (Nsight Compute could not count them, or wrote nothing)
// is still recorded and shown, saying why.
func (e *Env) profileLive(l *Lesson, o ProfileOptions) error {
	var pts []profilePoint
	var err error
	if o.Mine != nil {
		pts, err = l.minePoints(*o.Mine)
	} else {
		pts, err = l.profilePoints(o)
	}
	if err != nil {
		return err
	}
	wrap, err := profiler.Wrapper()
	if err != nil {
		return err
	}
	sub, w, err := e.wrapped(wrap)
	if err != nil {
		return err
	}
	defer w.Close()
	e.printf("Under Nsight Compute: each kernel runs once for every pass of counters it needs, with its clocks locked at base and the caches flushed before each pass.\n")
	rs, runErr := sub.profileRun(l, pts, o.Mine)
	var sets [][]profiler.Kernel
	var reportErr error
	if slices.ContainsFunc(rs, func(r Result) bool { return r.Outcome == "" }) {
		sets, reportErr = profiler.Report(w)
	}
	for i := range rs {
		if rs[i].Outcome == "" && i < len(sets) {
			rs[i].Kernels = sets[i]
		}
		if rs[i].Outcome == "" && len(rs[i].Kernels) == 0 {
			why := "Nsight Compute recorded no kernel for it"
			if reportErr != nil {
				why = firstLine(reportErr.Error())
			}
			rs[i].Outcome, rs[i].Detail = Skipped, why
		}
		e.record(rs[i])
	}
	e.showProfiles(l, rs)
	return errors.Join(runErr, reportErr)
}

// profilePoint is one row of a profile: impl of p at size.
type profilePoint struct {
	step  string
	p     *Problem
	impl  Impl
	size  Size
	block int
	src   *nvrtc.Source // a learner's file, for Mine; nil for the course's kernels
}

// profilePoints lists the rows of l's profile.
func (l *Lesson) profilePoints(o ProfileOptions) ([]profilePoint, error) {
	ts, err := l.profileTargets(o)
	if err != nil {
		return nil, err
	}
	var pts []profilePoint
	for _, t := range ts {
		for _, sz := range t.sizes {
			for _, im := range t.impls {
				pts = append(pts, profilePoint{step: t.step, p: t.p, impl: im, size: sz, block: im.block()})
			}
		}
	}
	return pts, nil
}

// minePoints lists the rows of a learner's kernel's profile: theirs, and
// the version it is judged like, at the exercise's size (or the size the
// version's sweep measures).
func (l *Lesson) minePoints(s Submission) ([]profilePoint, error) {
	if s.Like == "" && l.Exercise != nil {
		s.Like = l.Exercise.Like
	}
	if s.Like == "" {
		return nil, fmt.Errorf("%s has no exercise: say which version to profile it beside with --like", l.Slug)
	}
	p, err := l.findVariant(s.Like)
	if err != nil {
		return nil, err
	}
	like, _ := p.impl(s.Like)
	if like.Library {
		return nil, fmt.Errorf("%s is a library call: a kernel is profiled beside a kernel version", s.Like)
	}
	src := nvrtc.Source{Name: s.File, Code: s.Code, Headers: kernels.Headers()}
	sig, err := pickKernel(l, src, s.Kernel, s.Like)
	if err != nil {
		return nil, err
	}
	size := l.benchSize(p, s.Like)
	if x := l.Exercise; x != nil && s.Like == x.Like && x.Bench != nil {
		size = x.Bench
	}
	block := cmp.Or(s.Block, like.block())
	mine := Impl{Name: sig.Name, Like: s.Like, Block: block}
	step := "yours: " + s.File
	return []profilePoint{
		{step: step, p: p, impl: mine, size: size, block: block, src: &src},
		{step: step, p: p, impl: like, size: size, block: like.block()},
	}, nil
}

// wrapped returns an Env on a worker of its own started under wrap, seen
// through e's view: what was compiled and said once is shared; what was
// loaded and measured on e's worker is not. The caller closes the worker.
func (e *Env) wrapped(wrap *gpu.Wrapper) (*Env, *gpu.Worker, error) {
	w, err := gpu.Open(gpu.Options{Wrap: wrap, Stderr: e.stderr, Timeout: e.timeout})
	if err != nil {
		return nil, nil, err
	}
	s := newSession(w, nil)
	s.images, s.imagesMu, s.noted, s.timeout, s.stderr = e.images, e.imagesMu, e.noted, e.timeout, e.stderr
	return &Env{Session: s, View: e.View}, w, nil
}

// profileRun runs each point once, checked, inside a gpu.Profile marked
// with the point's index, and returns a result per point: its kernels
// come from the profiler's report afterwards. A point that cannot run, or
// fails its check, is not profiled and says why.
func (e *Env) profileRun(l *Lesson, pts []profilePoint, mine *Submission) ([]Result, error) {
	var out []Result
	var first error
	for i, pt := range pts {
		if err := e.canceled(); err != nil {
			return out, ErrStopped
		}
		e.progress(i, len(pts), fmt.Sprintf("%s %s", pt.impl.Name, pt.p.label(pt.size)))
		r := benchResult(l, pt.p, pt.step, pt.impl, pt.size, pt.block)
		r.Kind = "profile"
		r.Detail = "clocks locked at base by Nsight Compute (--clock-control " + profiler.ClockControl + ")"
		e.stamp(&r)
		if mine != nil && pt.src != nil {
			r.Variant += yours
		}
		r, err := e.profileOne(l, pt, i, r)
		if err != nil && first == nil {
			first = err
		}
		out = append(out, r)
	}
	e.progress(len(pts), len(pts), "")
	return out, first
}

// profileOne sets up pt, checks it, and runs it once inside gpu.Profile
// number mark.
func (e *Env) profileOne(l *Lesson, pt profilePoint, mark int, r Result) (Result, error) {
	r, ok := e.before(pt.p, pt.impl, pt.size, r)
	if !ok {
		return r, nil
	}
	var k gpu.Kernel
	var err error
	if pt.src != nil {
		k, err = e.Kernel(*pt.src, pt.impl.Name)
	} else {
		k, err = e.implKernel(l, pt.p, pt.impl)
	}
	if err != nil {
		return r, failure(&r, pt.p, pt.impl, pt.size, err)
	}
	c, ops, err := e.runOnce(pt.p, pt.size, pt.p.launchAs(pt.impl), k, pt.block)
	if err != nil {
		return r, failure(&r, pt.p, pt.impl, pt.size, err)
	}
	defer c.Free()
	if _, cerr := c.Check(); cerr != nil {
		err = fmt.Errorf("its check failed, so it was not profiled: %w", cerr)
	}
	if err == nil {
		_, err = e.Dev.Call(gpu.Profile{Mark: mark, Ops: ops})
	}
	if err != nil {
		return r, failure(&r, pt.p, pt.impl, pt.size, err)
	}
	r.Passed = true
	return r, nil
}

// replayProfiles shows the profiles recorded with l, narrowed by o.
func (e *Env) replayProfiles(l *Lesson, o ProfileOptions) error {
	if o.Mine != nil {
		return fmt.Errorf("profiling %s needs a GPU and Nsight Compute; there is no GPU here (%v)", o.Mine.File, e.NoGPU)
	}
	ts, err := l.profileTargets(o)
	if err != nil {
		return err
	}
	var rs []Result
	for _, t := range ts {
		for _, r := range l.recorded.Filter(t.step, "profile") {
			if slices.ContainsFunc(t.impls, func(im Impl) bool { return im.Name == r.Variant }) {
				rs = append(rs, r)
			}
		}
	}
	if len(rs) == 0 {
		var steps []string
		for _, t := range ts {
			steps = append(steps, fmt.Sprintf("%q", t.step))
		}
		return fmt.Errorf("no GPU here (%v), and no profile of %s was recorded with %s", e.NoGPU, strings.Join(steps, ", "), l.Slug)
	}
	e.replayNote("showing the profiles", rs)
	e.showProfiles(l, rs)
	return nil
}

// showProfiles prints the tables of rs, one pair per step.
func (e *Env) showProfiles(l *Lesson, rs []Result) {
	var steps []string
	for _, r := range rs {
		if !slices.Contains(steps, r.Step) {
			steps = append(steps, r.Step)
		}
	}
	for _, step := range steps {
		var in []Result
		for _, r := range rs {
			if r.Step == step {
				in = append(in, r)
			}
		}
		p := l.problemMeasuring(in)
		where := step
		if !slices.ContainsFunc(in, func(r Result) bool { return r.Size != in[0].Size }) {
			where += ", " + in[0].Size
		}
		e.printf("\n── Profile: %s · %s\n", where, e.About(in))
		if note := clockNote(in); note != "" {
			e.printf("%s\n", note)
		}
		e.PrintTable(ProfileTable(p, in, MemoryColumns))
		e.PrintTable(ProfileTable(p, in, ComputeColumns))
		for _, line := range kernelNames(in) {
			e.printf("%s\n", line)
		}
	}
}

// problemMeasuring is the problem of l whose impls rs ran: the first row
// that is one of l's impls says (a learner's kernel is not; the version
// profiled beside it is), else l's first problem, or nil.
func (l *Lesson) problemMeasuring(rs []Result) *Problem {
	for _, r := range rs {
		if p, err := l.findVariant(r.Variant); err == nil {
			return p
		}
	}
	if ps := l.Problems(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// ProfileStep is a step that shows the profile of a sweep's versions,
// beside the prose its counters support: this session's where `profile`
// ran, else the one recorded with the lesson, saying which.
type ProfileStep struct {
	Of      *Sweep   // the sweep whose versions were profiled
	Impls   []string // the rows to show, in this order; all when nil
	Columns []string // the columns to show (MemoryColumns, ComputeColumns, or some of them); both tables when nil
	// Sizes, if set, narrows the rows to these sizes (a sweep profiled at
	// several).
	Sizes []Size
}

// Kind is "profile".
func (*ProfileStep) Kind() string { return "profile" }

// Do shows the profile.
func (ps *ProfileStep) Do(env *Env, l *Lesson, step string) error {
	of, err := l.stepTitle(ps.Of)
	if err != nil {
		return err
	}
	all := env.latest(l, of, "profile")
	var rs []Result
	for _, r := range all {
		if (ps.Impls == nil || slices.Contains(ps.Impls, r.Variant)) &&
			(ps.Sizes == nil || slices.ContainsFunc(ps.Sizes, func(s Size) bool { return slices.Equal(s, Size(r.Dims)) })) {
			rs = append(rs, r)
		}
	}
	if ps.Impls != nil {
		slices.SortStableFunc(rs, func(a, b Result) int {
			return slices.Index(ps.Impls, a.Variant) - slices.Index(ps.Impls, b.Variant)
		})
	}
	if len(rs) == 0 {
		env.printf("No profile of %q was recorded; `profile` measures one where Nsight Compute (ncu) is installed.\n", of)
		return nil
	}
	p := l.problemMeasuring(rs)
	env.printf("Nsight Compute's counters, %s.\n", env.About(rs))
	if note := clockNote(rs); note != "" {
		env.printf("%s\n", note)
	}
	if ps.Columns != nil {
		env.PrintTable(ProfileTable(p, rs, ps.Columns))
	} else {
		env.PrintTable(ProfileTable(p, rs, MemoryColumns))
		env.PrintTable(ProfileTable(p, rs, ComputeColumns))
	}
	for _, line := range kernelNames(rs) {
		env.printf("%s\n", line)
	}
	return nil
}
