package lessons

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cudarepl/gpu"
	"cudarepl/nvrtc"
)

// Edit is a learner's version of one of the lesson's kernels, to check and
// time beside the course's: the REPL's "edit kernel", a notebook's kernel
// cell.
type Edit struct {
	Kernel string // the course's kernel it stands for, e.g. "vadd_v2"
	Code   string // the learner's version of that kernel's function
	// File is the name the learner knows Code by, which compile errors
	// give with Code's own line numbers: their copy's file name, or "your
	// cell"; the kernel's name and "_yours.cu" when empty.
	File  string
	Block int  // threads per block; the course's when 0
	Size  Size // the size it is timed at; the lesson's when nil
}

// ErrUnchanged says an Edit is the course's kernel, launched as the course
// launches it: there is nothing to compare, and the step runs as written.
var ErrUnchanged = errors.New("the course's kernel, unchanged")

// KernelSource returns the source of the lesson's kernel name, its comment
// and function, as a learner would edit it: with its tile code where it
// hands its work to a function of its file (kernelText).
func (l *Lesson) KernelSource(name string) (string, error) {
	_, fn, err := l.kernelFunction(name)
	return fn, err
}

// kernelFunction finds the kernel name in the lesson's kernel files and
// returns its file's source and the kernel's function text.
func (l *Lesson) kernelFunction(name string) (nvrtc.Source, string, error) {
	_, src, err := l.fileDeclaring(name)
	if err != nil {
		return nvrtc.Source{}, "", err
	}
	fn, err := kernelText(src, name)
	return src, fn, err
}

// Tryable reports whether name is a kernel whose edits can be checked and
// timed: one the lesson runs as a version of a problem, or one that
// versions launch beside a library (Impl.Kernels). It says how the course
// launches it: threads per block (0 where the version that launches it
// decides) and the size it is timed at.
func (l *Lesson) Tryable(name string) (block int, size Size, ok bool) {
	if p, ims := l.launchedBy(name); len(ims) > 0 {
		var names []string
		for _, im := range ims {
			names = append(names, im.Name)
		}
		return 0, l.benchSize(p, names...), true
	}
	p, err := l.findVariant(name)
	if err != nil {
		return 0, nil, false
	}
	im, _ := p.impl(name)
	if im.Library {
		return 0, nil, false
	}
	return im.block(), l.benchSize(p, name), true
}

// launchedBy returns the versions that launch kernel name beside a
// library, and their problem.
func (l *Lesson) launchedBy(name string) (*Problem, []Impl) {
	for _, p := range l.Problems() {
		var ims []Impl
		for _, im := range p.Impls {
			if slices.Contains(im.Kernels, name) {
				ims = append(ims, im)
			}
		}
		if len(ims) > 0 {
			return p, ims
		}
	}
	return nil, nil
}

// tryTime is the longest a run of a version may have taken, as recorded,
// at the size it is tried at alone: a try times it some fifty times, and
// should answer in a few seconds.
const tryTime = 100 * time.Millisecond

// benchSize is the size the versions names of problem p are timed at when
// one is tried alone: of the sizes of the lesson's first sweep over p, the
// largest that each of them accepts, that none was refused or ran out of
// memory at where it was recorded, and at which none took longer than
// tryTime a run; the sweep's smallest where no size is all of that, and
// p's largest check size where no sweep covers p.
func (l *Lesson) benchSize(p *Problem, names ...string) Size {
	for i := range l.Steps {
		_, sw, ok := l.sizeSweep(i)
		if !ok || len(sw.sizes) == 0 {
			continue
		}
		if q, err := problemOf(l, sw.problem); err != nil || q != p {
			continue
		}
		for j := len(sw.sizes) - 1; j >= 0; j-- {
			if l.answersSoon(p, names, sw.sizes[j]) {
				return sw.sizes[j]
			}
		}
		return sw.sizes[0]
	}
	return p.CheckSizes[len(p.CheckSizes)-1]
}

// answersSoon reports whether each of the versions names of p accepts
// size s, and was neither refused, out of memory nor slower than tryTime
// a run at s wherever the lesson recorded it there.
func (l *Lesson) answersSoon(p *Problem, names []string, s Size) bool {
	label := p.label(s)
	for _, n := range names {
		if im, err := p.impl(n); err == nil && im.Requires != nil && im.Requires(s) != nil {
			return false
		}
		for _, r := range l.recorded.Results {
			if r.Kind != "bench" || r.Variant != n || r.Size != label {
				continue
			}
			if r.Outcome != "" || time.Duration(r.MedianMs*float64(time.Millisecond)) > tryTime {
				return false
			}
		}
	}
	return true
}

// TryEdit checks ed's kernel exactly as the course's is checked and, where
// it passes on a GPU, times it beside the course's at one size: "yours" and
// the course's side by side. The learner's function replaces the course's
// in its file, so that helpers the file defines still compile. It returns
// ErrUnchanged for the course's kernel as the course launches it, and the
// verdict's failure for a kernel that does not pass.
func (e *Env) TryEdit(l *Lesson, ed Edit) error {
	src, orig, err := l.kernelFunction(ed.Kernel)
	if err != nil {
		return err
	}
	block, size, ok := l.Tryable(ed.Kernel)
	if !ok {
		if i, ok := l.stepLaunching(ed.Kernel); ok {
			return e.RunEdited(l, i, ed)
		}
		return fmt.Errorf("lessons: %s: %s is not run as a version of the lesson's problems, so it cannot be checked on its own", l.Slug, ed.Kernel)
	}
	if ed.Block <= 0 {
		ed.Block = block
	}
	if ed.Size == nil {
		ed.Size = size
	}
	if strings.TrimSpace(ed.Code) == strings.TrimSpace(orig) && ed.Block == block && ed.Size.String() == size.String() {
		return ErrUnchanged
	}
	if err := ed.valid(len(size)); err != nil {
		return err
	}
	if p, ims := l.launchedBy(ed.Kernel); len(ims) > 0 {
		if ed.Block != 0 {
			return fmt.Errorf("lessons: %s launches %s with blocks of its own choosing: leave the block size at 0", ims[0].Name, ed.Kernel)
		}
		return e.tryLaunched(l, p, ims, ed)
	}
	yours := ed.in(src)
	v, err := e.Judge(l, Submission{File: yours.Name, Code: yours.Code, Kernel: ed.Kernel, Like: ed.Kernel, Block: ed.Block, Focus: yours.Focus})
	if err != nil {
		return err
	}
	if !v.Passed() {
		return e.verdictErr(v) // nil when compiled only: the verdict said why
	}
	return e.benchBeside(l, ed, yours)
}

// yours marks a result measured with the learner's kernel.
const yours = " (yours)"

// in returns src with the learner's function in place of the course's
// kernel (and their tile code in place of its, see edited), under a name
// that says whose it is, and with src's headers; src itself where they
// changed nothing.
func (ed Edit) in(src nvrtc.Source) nvrtc.Source {
	file := ed.File
	if file == "" {
		file = ed.Kernel + "_yours.cu"
	}
	code, changed := edited(src, ed.Kernel, ed.Code, file)
	if !changed {
		return src
	}
	src.Name, src.Code, src.Focus = ed.Kernel+"_yours.cu", code, file
	return src
}

// valid says what is wrong with an edit before anything compiles: a
// renamed kernel, a block no GPU launches, a size that is not dims
// positive numbers.
func (ed Edit) valid(dims int) error {
	switch {
	case !strings.Contains(ed.Code, ed.Kernel):
		return fmt.Errorf("lessons: your version must keep the kernel's name, %s, and its parameters", ed.Kernel)
	case ed.Block != 0 && ValidBlock(ed.Block) != nil:
		return ValidBlock(ed.Block)
	case ed.Size != nil && len(ed.Size) != dims:
		return fmt.Errorf("lessons: size %s has %d numbers; %s takes %d", ed.Size, len(ed.Size), ed.Kernel, dims)
	}
	for _, v := range ed.Size {
		if v < 1 {
			return fmt.Errorf("lessons: size %s: every number must be at least 1", ed.Size)
		}
	}
	return nil
}

// tryLaunched checks the learner's version of a kernel that the versions
// ims launch beside a library (lesson 11's bias and ReLU after cuDNN's
// convolution) with every check those versions pass, then times each
// version with theirs and with the course's at ed's size.
func (e *Env) tryLaunched(l *Lesson, p *Problem, ims []Impl, ed Edit) error {
	src, err := kernelSource(l, p.Kernels)
	if err != nil {
		return err
	}
	v := Verdict{Kernel: ed.Kernel + yours, Like: ed.Kernel}
	if _, ok := e.compiled(ed.in(src), ed.Kernel, nil, &v); !ok {
		return e.verdictErr(v) // nil when compiled only: the verdict said why
	}
	v.Judged = true
	theirs := e.withEdit(ed)
	for _, im := range ims {
		rs, err := checkImpl(theirs, l, p, "check", im, gpu.Kernel{}, len(v.Results), len(ims)*len(p.CheckSizes))
		v.Results = append(v.Results, rs...)
		if err != nil && v.Err == nil {
			v.Err = err
		}
	}
	e.progress(1, 1, "")
	e.PrintTable(checkTable(v.Results))
	if err := e.verdictErr(e.verdict(v)); err != nil {
		return err
	}
	if err := e.fits(p, Impl{}, ed.Size); err != nil {
		return err
	}
	ceiling := e.ceilingOnce(p.Ceiling, false)
	var rs []Result
	for _, im := range ims {
		course, err := benchPoint(e, l, p, "try", im, gpu.Kernel{}, ed.Size, im.block(), ceiling)
		if err != nil {
			return err
		}
		r, err := benchPoint(theirs, l, p, "try", im, gpu.Kernel{}, ed.Size, im.block(), ceiling)
		if err != nil {
			return err
		}
		r.Variant = im.Name + yours
		rs = append(rs, r, course)
	}
	e.PrintTable(benchTable(p, rs))
	for i := 0; i < len(rs); i += 2 {
		e.printf("%s: %.1f %s with yours, %.1f %s with the course's %s (%s, %s)\n", ims[i/2].Name, rs[i].Throughput, rs[i].Unit,
			rs[i+1].Throughput, rs[i+1].Unit, ed.Kernel, p.label(ed.Size), ResultSet{Results: rs}.Source())
	}
	return nil
}

// verdictErr is a judged verdict's failure as a VerdictError, or nil.
func (e *Env) verdictErr(v Verdict) error {
	if v.Judged && !v.Passed() {
		return &VerdictError{v}
	}
	return nil
}

// stepLaunching returns the index of the step that launches kernel name
// itself.
func (l *Lesson) stepLaunching(name string) (int, bool) {
	for i, s := range l.Steps {
		if k, _, _ := launchOf(s.Action); k != "" && k == name {
			return i, true
		}
	}
	return 0, false
}

// RunEdited runs step i (from 0) of l, a step that launches ed's kernel
// itself (a Run with a Kernel), with the learner's kernel and launch in
// place of the course's: the step's own checks judge it, and what the
// step shows is theirs. The course's kernel as the course launches it
// runs the step as written.
func (e *Env) RunEdited(l *Lesson, i int, ed Edit) error {
	if i < 0 || i >= len(l.Steps) {
		return fmt.Errorf("lessons: %s has steps 1 to %d, not %d", l.Slug, len(l.Steps), i+1)
	}
	step := l.Steps[i]
	kernel, block, size := launchOf(step.Action)
	if kernel == "" || kernel != ed.Kernel {
		return fmt.Errorf("lessons: %s step %d, %q, does not launch %s", l.Slug, i+1, step.Title, ed.Kernel)
	}
	orig, err := l.KernelSource(ed.Kernel)
	if err != nil {
		return err
	}
	if ed.Block == 0 {
		ed.Block = block
	}
	if ed.Size == nil {
		ed.Size = size
	}
	sameCode := strings.TrimSpace(ed.Code) == strings.TrimSpace(orig)
	if sameCode && ed.Block == block && ed.Size.String() == size.String() {
		return step.Action.Do(e, l, step.Title)
	}
	if err := ed.valid(len(size)); err != nil {
		return err
	}
	what := "your " + ed.Kernel
	if sameCode {
		what = "the course's " + ed.Kernel
	}
	e.printf("Running %s: blocks of %d threads, size %s.\n", what, ed.Block, SizeArg(ed.Size))
	return step.Action.Do(e.withEdit(ed), l, step.Title)
}

// VerdictError is a learner's kernel that failed its checks; the verdict
// has been printed.
type VerdictError struct{ Verdict Verdict }

func (e *VerdictError) Error() string { return e.Verdict.String() }

// benchBeside times the course's kernel and the learner's at ed's size and
// block, and shows them in one table.
func (e *Env) benchBeside(l *Lesson, ed Edit, yours nvrtc.Source) error {
	p, err := l.findVariant(ed.Kernel)
	if err != nil {
		return err
	}
	img, err := e.compile(yours, nil)
	if err != nil {
		return err
	}
	k, err := e.Dev.LoadKernel(img, ed.Kernel)
	if err != nil {
		return err
	}
	_, _, err = e.timeBeside(l, p, "try", Impl{Name: ed.Kernel, Like: ed.Kernel, Block: ed.Block}, k, ed.Size)
	return err
}

// StepKernels lists the kernels step i (from 0) shows, where it is a step
// that shows kernels: the ones it names, or every version of its file.
func (l *Lesson) StepKernels(i int) []string {
	_, names, _ := kernelsOf(l.Steps[i].Action, l)
	return names
}

// StepLaunch returns the kernel step i (from 0) launches itself, and the
// threads per block and the size it launches it with, where it is such a
// step (a Run with a Kernel): a notebook shows the three in the step's
// cell for the learner to change (RunEdited).
func (l *Lesson) StepLaunch(i int) (kernel string, block int, size Size, ok bool) {
	kernel, block, size = launchOf(l.Steps[i].Action)
	return kernel, block, size, kernel != ""
}

// StepSizes returns the sizes step i (from 0) measures, where it is a
// sweep over sizes.
func (l *Lesson) StepSizes(i int) ([]Size, bool) {
	if _, sw, ok := l.sizeSweep(i); ok {
		return sw.sizes, true
	}
	return nil, false
}

// StepBlocks returns the threads per block step i (from 0) measures, and
// its one size, where it is a sweep over block sizes.
func (l *Lesson) StepBlocks(i int) ([]int, Size, bool) {
	if a, ok := sweepOf(l.Steps[i].Action); ok {
		if sw := a.swept(); len(sw.blocks) > 0 {
			return sw.blocks, sw.sizes[0], true
		}
	}
	return nil, nil, false
}

// StepFigures names the figures step i (from 0) draws of what it
// measured, where it draws any (a sweep): each is saved under
// Env.PlotDir, named after the lesson's folder and the figure's name.
func (l *Lesson) StepFigures(i int) []string {
	if d, ok := drawerOf(l.Steps[i].Action); ok {
		return d.figures(l.Steps[i].Title)
	}
	return nil
}

// sizeSweep returns step i's action and what it sweeps, where it is a
// sweep over sizes, not over threads per block.
func (l *Lesson) sizeSweep(i int) (sweeper, sweepShape, bool) {
	a, ok := sweepOf(l.Steps[i].Action)
	if !ok {
		return nil, sweepShape{}, false
	}
	sw := a.swept()
	return a, sw, len(sw.blocks) == 0
}

// SizeArg writes s as a learner types a size: "2^26" for a power of two,
// "4096x4096x4096" for a product; ParseSizes reads it back.
func SizeArg(s Size) string {
	if k, ok := powerOfTwo(s); ok {
		return fmt.Sprintf("2^%d", k)
	}
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, "x")
}

// KernelCopy writes the learner's copy of the lesson's kernel name to the
// workspace, unless there is one already, which is never overwritten; it
// returns the copy's path and whether it was made now.
func (l *Lesson) KernelCopy(env *Env, name string) (string, bool, error) {
	src, err := l.KernelSource(name)
	if err != nil {
		return "", false, err
	}
	ws := env.Workspace
	if ws == "" {
		ws = DefaultWorkspace()
	}
	path := filepath.Join(ws, l.Slug, name+".cu")
	if _, err := os.Stat(path); err == nil {
		return path, false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", false, fmt.Errorf("lessons: your copy of %s: %w", name, err)
	}
	if err := os.WriteFile(path, []byte(src+"\n"), 0o644); err != nil {
		return "", false, fmt.Errorf("lessons: your copy of %s: %w", name, err)
	}
	return path, true, nil
}
