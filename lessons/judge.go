package lessons

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/nvrtc"
)

// Submission is a learner's kernel file to judge like one of a lesson's
// versions.
type Submission struct {
	File string // its name, for messages, e.g. "mine.cu"
	Code string // the CUDA C source

	// Kernel is the kernel to judge. Empty picks the exercise's kernel if
	// the file declares it, else the file's one kernel whose parameters
	// are those of Like's version.
	Kernel string
	// Like is the version the kernel is launched as and checked like;
	// empty means the exercise's.
	Like string
	// Block is the threads per block it is launched with; Like's when 0.
	Block int
	// Focus, where Code is a learner's edit spliced into a course file,
	// is the name #line directives give the learner's own lines: compile
	// errors name their lines (nvrtc.Source.Focus).
	Focus string
}

// Verdict is what judging a learner's kernel found.
type Verdict struct {
	Kernel, Like string
	Results      []Result // one check per check size
	Err          error    // why it failed, or why it could not be judged here
	Judged       bool     // it ran on a GPU; false when it was only compiled, or not even that
}

// Passed reports whether the kernel ran and passed every check.
func (v Verdict) Passed() bool { return v.Judged && v.Err == nil }

// String is the verdict's one line.
func (v Verdict) String() string {
	switch {
	case v.Passed():
		return fmt.Sprintf("%s passes every check %s passes.", v.Kernel, v.Like)
	case v.Judged && errors.As(v.Err, new(*nvrtc.CompileError)):
		return fmt.Sprintf("FAILED: %s does not compile (the compiler's log is above)", v.Kernel)
	case v.Judged && timedOut(v.Err):
		return fmt.Sprintf("FAILED: %s: %s: %s", v.Kernel, firstLine(v.Err.Error()), timeoutHint)
	case v.Judged:
		return fmt.Sprintf("FAILED: %s: %s", v.Kernel, firstLine(v.Err.Error()))
	}
	return fmt.Sprintf("%s was not judged: %v", v.Kernel, firstLine(v.Err.Error()))
}

// timeoutHint is what a kernel that never ends most likely does, said
// after the time limit it ran past.
const timeoutHint = "a kernel that never ends has a loop whose condition never changes, " +
	"or a __syncthreads() that some threads of a block never reach (under an if), so the others wait for ever"

// timedOut reports whether err is a worker that ran past its time limit.
func timedOut(err error) bool {
	var we *gpu.WorkerError
	return errors.As(err, &we) && we.TimedOut
}

// ErrNeedsGPU says a learner's kernel compiled but could not be judged.
var ErrNeedsGPU = errors.New("judging a kernel needs a GPU; it compiled, which is as far as replay mode goes")

// Judge compiles s and checks its kernel, launched like s.Like, at every
// check size of the lesson's problem: exactly the checks the lesson's own
// versions pass. It prints what it compiled, the checks and the verdict's
// line. A kernel that does not compile fails (its error names the file and
// line); without a GPU the verdict says it was compiled only, and without
// NVRTC that it could not be. The error is for a submission that cannot be
// judged as asked: no such kernel, or no version to judge it like.
func (e *Env) Judge(l *Lesson, s Submission) (Verdict, error) {
	if s.Like == "" && l.Exercise != nil {
		s.Like = l.Exercise.Like
	}
	if s.Like == "" {
		return Verdict{}, fmt.Errorf("%s has no exercise: say which version to judge against with --like", l.Slug)
	}
	if l.Exercise.plans(s) {
		return e.judgePlan(l, s)
	}
	p, err := l.findVariant(s.Like)
	if err != nil {
		return Verdict{}, err
	}
	if s.Block == 0 {
		like, _ := p.impl(s.Like)
		s.Block = like.block()
	}
	src := nvrtc.Source{Name: s.File, Code: s.Code, Headers: kernels.Headers(), Focus: s.Focus} // theirs may #include the course header
	sig, err := pickKernel(l, src, s.Kernel, s.Like)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Kernel: sig.Name, Like: s.Like}
	var names []string
	if !sig.ExternC {
		names = []string{sig.Name} // found by its C++ name, through NVRTC
	}
	img, ok := e.compiled(src, sig.Name, names, &v)
	if !ok {
		return v, nil
	}
	k, err := e.Dev.LoadKernel(img, sig.Name)
	if err != nil {
		v.Err, v.Judged = err, true
		return e.verdict(v), nil
	}
	v.Judged = true
	var bench Size
	var fast *Speed
	if x := l.Exercise; x != nil && s.Like == x.Like {
		bench, fast = x.Bench, x.Fast
	}
	v.Results, v.Err = e.checkThenTime(l, p, Impl{Name: sig.Name, Like: s.Like, Block: s.Block}, k, bench, fast)
	return e.verdict(v), nil
}

// checkThenTime checks mine, run with k, at every check size of p and
// shows the checks; where it passes, outside compute-sanitizer, it is also
// timed beside the version it is judged like at bench, if set. Timing is a
// courtesy, whose failure does not fail the check, unless fast is set:
// then a kernel that passes must also reach that speed.
func (e *Env) checkThenTime(l *Lesson, p *Problem, mine Impl, k gpu.Kernel, bench Size, fast *Speed) ([]Result, error) {
	rs, err := checkImpl(e, l, p, "check", mine, k, 0, len(p.CheckSizes))
	e.progress(1, 1, "")
	e.PrintTable(checkTable(rs))
	if err != nil || bench == nil {
		return rs, err
	}
	if e.sanitizing != "" {
		if fast != nil {
			e.printf("(speed is not judged under compute-sanitizer)\n")
		}
		return rs, nil
	}
	r, course, terr := e.timeBeside(l, p, "exercise", mine, k, bench)
	if terr != nil {
		if fast != nil {
			return rs, fmt.Errorf("%s at %s was not timed, and a pass needs a speed: %w", mine.Name, p.label(bench), terr)
		}
		e.printf("(not timed: %v)\n", firstLine(terr.Error()))
		return rs, nil
	}
	if fast != nil {
		return rs, e.fastEnough(l, p, bench, *fast, r, course)
	}
	return rs, nil
}

// fastEnough says why mine (timed as r at size, beside course, the version
// it is judged like) is too slow for fast, or nil.
func (e *Env) fastEnough(l *Lesson, p *Problem, size Size, fast Speed, r, course Result) error {
	base, name := r.Ceiling, r.CeilingName
	switch fast.Against {
	case "":
	case course.Variant:
		base, name = course.Throughput, course.Variant
	default:
		against, err := p.impl(fast.Against)
		if err != nil {
			return err
		}
		b, err := e.timeVersion(l, p, "exercise", against, size)
		if err != nil {
			return fmt.Errorf("not judged on speed: timing %s: %w", against.Name, err)
		}
		base, name = b.Throughput, against.Name
	}
	if base <= 0 {
		return fmt.Errorf("not judged on speed: nothing measured to hold %s against", r.Variant)
	}
	ratio := r.Throughput / base
	if ratio < fast.Min {
		err := fmt.Errorf("correct but too slow: %.1f %s at %s is %.2f of %s (%.1f %s); a pass needs at least %.2f",
			r.Throughput, r.Unit, p.label(size), ratio, name, base, r.Unit, fast.Min)
		if fast.Why != "" {
			err = fmt.Errorf("%w: %s", err, fast.Why)
		}
		return err
	}
	e.printf("fast enough: %.2f of %s (a pass needs %.2f)\n", ratio, name, fast.Min)
	return nil
}

// needsGPU is a plan that reads and passes what can be checked without a
// GPU; it is ErrNeedsGPU to errors.Is.
type needsGPU string

func (n needsGPU) Error() string      { return string(n) }
func (needsGPU) Is(target error) bool { return target == ErrNeedsGPU }

// judgePlan judges a learner's plan of the work (Exercise.Plan): read and
// checked as written on any machine, then, on a GPU, run as the exercise's
// version at every check size of its problem, timed beside it where it
// passes, and shown.
func (e *Env) judgePlan(l *Lesson, s Submission) (Verdict, error) {
	x := l.Exercise
	p, err := l.findVariant(x.Like)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Kernel: "your " + cmp.Or(x.What, "plan"), Like: x.Like}
	pl, err := x.Plan.read(s.Code)
	if err != nil {
		// Wrong as written: judged, as a kernel that does not compile is.
		v.Err, v.Judged = fmt.Errorf("%s: %w", s.File, err), true
		e.printf("%s\n", v)
		return v, nil
	}
	e.printf("%s: %s\n", s.File, pl)
	if !e.Live() {
		v.Err = needsGPU("running it needs a GPU; it reads, and its order is sound, which is as far as replay mode goes")
		e.printf("%s\n", v)
		return v, nil
	}
	v.Judged = true
	mine := Impl{Name: x.Kernel, Like: x.Like, plan: pl.Stringer, Library: true} // no kernel of its own: no block size to show
	v.Results, v.Err = e.checkThenTime(l, p, mine, gpu.Kernel{}, x.Bench, x.Fast)
	if v.Err == nil && e.sanitizing == "" && pl.show != nil {
		// Showing is a courtesy too: a failure here does not fail the check.
		if err := pl.show(e, l); err != nil {
			e.printf("(not shown: %v)\n", firstLine(err.Error()))
		}
	}
	return e.verdict(v), nil
}

// timeBeside times a learner's kernel k, run as mine, and the version of
// p it stands for (mine.Like) at size, as step, and shows them in one
// table: for an edited kernel, and for an exercise that passes. It returns
// the two results, the learner's first.
func (e *Env) timeBeside(l *Lesson, p *Problem, step string, mine Impl, k gpu.Kernel, size Size) (r, course Result, err error) {
	like, err := p.impl(mine.Like)
	if err != nil {
		return r, course, err
	}
	if err := e.fits(p, like, size); err != nil {
		return r, course, err
	}
	if course, err = e.timeVersion(l, p, step, like, size); err != nil {
		return r, course, err
	}
	if r, err = benchPoint(e, l, p, step, mine, k, size, mine.block(), e.ceilingOnce(p.Ceiling, false)); err != nil {
		return r, course, err
	}
	r.Variant = mine.Name + " (yours)"
	rs := []Result{r, course}
	e.PrintTable(benchTable(p, rs))
	e.printf("yours: %.1f %s; the course's %s: %.1f %s (%s, %s)\n", r.Throughput, r.Unit, like.Name, course.Throughput, course.Unit,
		p.label(size), ResultSet{Results: rs}.Source())
	return r, course, nil
}

// timeVersion times the course's version impl of p at size, as step,
// with its kernel as the lesson compiles it.
func (e *Env) timeVersion(l *Lesson, p *Problem, step string, impl Impl, size Size) (Result, error) {
	k, err := e.implKernel(l, p, impl)
	if err != nil {
		return Result{}, err
	}
	return benchPoint(e, l, p, step, impl, k, size, impl.block(), e.ceilingOnce(p.Ceiling, false))
}

// compiled compiles src and prints the resources of its kernel name. ok is
// false where that is as far as judging goes here: src does not compile,
// or there is no GPU; v then holds why, and its line has been printed.
func (e *Env) compiled(src nvrtc.Source, name string, names []string, v *Verdict) (img *nvrtc.Image, ok bool) {
	img, err := e.compile(src, names)
	if err != nil {
		v.Err, v.Judged = err, !errors.Is(err, gpu.ErrNoGPU)
		*v = e.verdict(*v)
		return nil, false
	}
	if res, found := img.Kernel(name); found {
		e.printf("%s compiled: %s\n", src.Name, resourceLine(res))
	}
	if !e.Live() {
		v.Err = ErrNeedsGPU
		*v = e.verdict(*v)
		return nil, false
	}
	return img, true
}

// verdict prints v's line and returns it.
func (e *Env) verdict(v Verdict) Verdict {
	if v.Judged && v.Err != nil && len(v.Results) == 0 {
		e.printf("%v\n", v.Err) // a compile error's whole log
	}
	e.printf("%s\n", v)
	return v
}

// pickKernel chooses the kernel of src to judge like the version like: the
// one named, else the exercise's kernel, else the one kernel whose
// parameters are like's. Where none or several fit, the error lists what
// the file declares and how to pick one.
func pickKernel(l *Lesson, src nvrtc.Source, name, like string) (kernels.Signature, error) {
	sigs := kernels.Signatures(src)
	var declared []string
	for _, s := range sigs {
		declared = append(declared, s.String())
	}
	list := strings.Join(declared, ", ")
	// takes keeps a kernel picked by its name only where it takes what
	// like takes: one launched like a version of other parameters would
	// read its arguments as what they are not.
	takes := func(s kernels.Signature) (kernels.Signature, error) {
		if want, ok := likeSignature(l, like); ok && !s.Takes(want) {
			return kernels.Signature{}, fmt.Errorf("%s takes (%s), but %s takes (%s): it cannot be judged like %s (name a version with its parameters with --like)",
				s.Name, strings.Join(s.Params, ", "), like, strings.Join(want.Params, ", "), like)
		}
		return s, nil
	}
	if name != "" {
		for _, s := range sigs {
			if s.Name == name {
				return takes(s)
			}
		}
		if len(sigs) == 0 {
			return kernels.Signature{Name: name, ExternC: true}, nil // a declaration too unusual to read: try the name
		}
		return kernels.Signature{}, fmt.Errorf("%s declares no kernel %q (it declares %s)", src.Name, name, list)
	}
	if len(sigs) == 0 {
		return kernels.Signature{}, fmt.Errorf("%s declares no __global__ kernel", src.Name)
	}
	if x := l.Exercise; x != nil {
		for _, s := range sigs {
			if s.Name == x.Kernel {
				return takes(s)
			}
		}
	}
	want, ok := likeSignature(l, like)
	if !ok {
		if len(sigs) == 1 {
			return sigs[0], nil
		}
		return kernels.Signature{}, fmt.Errorf("%s declares %s: say which with --variant", src.Name, list)
	}
	var fit []kernels.Signature
	for _, s := range sigs {
		if s.Takes(want) {
			fit = append(fit, s)
		}
	}
	switch {
	case len(fit) == 1:
		return fit[0], nil
	case len(fit) == 0:
		return kernels.Signature{}, fmt.Errorf("%s declares %s, and none takes what %s takes (%s)", src.Name, list, like, strings.Join(want.Params, ", "))
	}
	return kernels.Signature{}, fmt.Errorf("%s declares %s: several take what %s takes; say which with --variant", src.Name, list, like)
}

// likeSignature is the parameter list a kernel judged like the version
// like must have: like's own, from the lesson's kernels, or the exercise's.
func likeSignature(l *Lesson, like string) (kernels.Signature, bool) {
	srcs := l.kernelSources()
	if x := l.Exercise; x != nil {
		srcs = append(srcs, nvrtc.Source{Name: x.File, Code: x.Starter})
	}
	for _, src := range srcs {
		for _, s := range kernels.Signatures(src) {
			if s.Name == like || l.Exercise != nil && s.Name == l.Exercise.Kernel && like == l.Exercise.Like {
				return s, true
			}
		}
	}
	return kernels.Signature{}, false
}

// kernelFiles lists the kernel files the lesson's steps use, its own first.
func (l *Lesson) kernelFiles() []string {
	var out []string
	add := func(f string) {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	add(l.Kernels)
	for _, p := range l.Problems() {
		add(p.Kernels)
		for _, im := range p.Impls {
			add(im.File)
		}
	}
	for _, s := range l.Steps {
		if file, _, ok := kernelsOf(s.Action, l); ok {
			add(file)
		}
	}
	return out
}

// kernelSources returns the sources of the lesson's kernel files, its own
// first.
func (l *Lesson) kernelSources() []nvrtc.Source {
	var out []nvrtc.Source
	for _, f := range l.kernelFiles() {
		if src, err := kernels.Source(f); err == nil {
			out = append(out, src)
		}
	}
	return out
}

// fileDefining returns the first of the lesson's kernel files in which the
// __device__ function name is found, defined there or in the course header
// it is given; "" when none is.
func (l *Lesson) fileDefining(name string) string {
	for _, f := range l.kernelFiles() {
		if src, err := kernels.Source(f); err == nil {
			if _, err := kernels.Function(src, name); err == nil {
				return f
			}
		}
	}
	return ""
}

// fileDeclaring returns the name and source of the lesson's kernel file
// that declares the kernel name.
func (l *Lesson) fileDeclaring(name string) (string, nvrtc.Source, error) {
	for _, f := range l.kernelFiles() {
		if src, err := kernels.Source(f); err == nil && slices.Contains(kernels.Names(src), name) {
			return f, src, nil
		}
	}
	return "", nvrtc.Source{}, fmt.Errorf("lessons: %s has no kernel %q (it has: %s)", l.Slug, name, strings.Join(l.KernelNames(), ", "))
}
