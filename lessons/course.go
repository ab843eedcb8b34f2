package lessons

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cudarepl/gpu"
	"cudarepl/kernels"
)

// Header prints the lesson's title and intro.
func (l *Lesson) Header(env *Env) {
	env.printf("Lesson %d · %s\n\n", l.Number, l.Title)
	env.Prose(l.Intro)
}

// RunStep prints step i (0-based) and runs its action.
func (l *Lesson) RunStep(env *Env, i int) error {
	if i < 0 || i >= len(l.Steps) {
		return fmt.Errorf("%s has steps 1 to %d, not %d", l.Slug, len(l.Steps), i+1)
	}
	s := l.Steps[i]
	env.printf("\n── %d/%d %s %s\n\n", i+1, len(l.Steps), s.Title, strings.Repeat("─", max(0, 60-len(s.Title))))
	env.Prose(s.Prose)
	env.printf("\n")
	if s.Action == nil {
		return nil
	}
	return s.Action.Do(env, l, s.Title)
}

// RunAll prints the whole lesson and runs every step. A step that fails is
// reported and the rest still run; the first error is returned.
func (l *Lesson) RunAll(env *Env) error {
	l.Header(env)
	var first error
	for i := range l.Steps {
		err := l.RunStep(env, i)
		if errors.Is(err, ErrStopped) {
			return err
		}
		if err != nil {
			env.printf("error: %v\n", err)
			if first == nil {
				first = fmt.Errorf("%s, step %q: %w", l.Slug, l.Steps[i].Title, err)
			}
		}
	}
	return first
}

// stepsOf returns the indexes of the steps whose action has one of the
// given kinds, in step order.
func (l *Lesson) stepsOf(kinds ...string) []int {
	var out []int
	for i, s := range l.Steps {
		for _, k := range kinds {
			if s.Action != nil && s.Action.Kind() == k {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// CheckAll runs every check step of the lesson, and checks the lesson's
// own problem too where no step does.
func (l *Lesson) CheckAll(env *Env) error {
	var first error
	for _, i := range l.stepsOf("check") {
		if env.canceled() != nil {
			return ErrStopped
		}
		err := l.Steps[i].Action.Do(env, l, l.Steps[i].Title)
		if errors.Is(err, ErrStopped) {
			return err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if env.canceled() != nil {
		return ErrStopped
	}
	if err := l.checkUncovered(env); err != nil && first == nil {
		first = err
	}
	return first
}

// checkUncovered checks the lesson's problem (its exercise's model among
// its versions) when no check step does.
func (l *Lesson) checkUncovered(env *Env) error {
	if l.Problem == nil {
		return nil
	}
	for _, i := range l.stepsOf("check") {
		if slices.Contains(problemsOf(l.Steps[i].Action, l), l.Problem) {
			return nil
		}
	}
	env.printf("\n── %s\n", "check")
	return (&CheckStep{}).Do(env, l, "check")
}

// BenchAll runs every sweep of the lesson and every run that measures;
// with env.Sizes set, only the sweeps over sizes, at those sizes.
func (l *Lesson) BenchAll(env *Env) error {
	if len(env.Sizes) > 0 {
		return l.sizeSweeps(env)
	}
	for _, i := range l.stepsOf("sweep", "measure") {
		env.printf("\n── %s\n", l.Steps[i].Title)
		if err := l.Steps[i].Action.Do(env, l, l.Steps[i].Title); err != nil {
			return err
		}
	}
	return nil
}

// Plot draws the figures of every step that draws what it measured (the
// sweeps) from this session's live results where there are any, else
// from the recorded ones.
func (l *Lesson) Plot(env *Env) error {
	n := 0
	for _, s := range l.Steps {
		d, ok := drawerOf(s.Action)
		if !ok {
			continue
		}
		rs := env.latest(l, s.Title, recordsOf(s.Action))
		if len(rs) == 0 {
			continue
		}
		env.printf("\n── %s\n", s.Title)
		if err := d.draw(env, l, s.Title, rs); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		env.printf("%s has nothing to plot yet: run its sweeps with 'bench'.\n", l.Slug)
	}
	return nil
}

// Variants lists every impl of every problem the lesson's steps run, each
// name once, for completion and help.
func (l *Lesson) Variants() []Impl {
	var out []Impl
	seen := map[string]bool{}
	for _, p := range l.Problems() {
		for _, im := range p.Impls {
			if !seen[im.Name] {
				seen[im.Name] = true
				out = append(out, im)
			}
		}
	}
	return out
}

// findVariant returns the problem that has an impl called name: the
// lesson's own first, then those of its steps.
func (l *Lesson) findVariant(name string) (*Problem, error) {
	for _, p := range l.Problems() {
		if _, err := p.impl(name); err == nil {
			return p, nil
		}
	}
	var names []string
	for _, im := range l.Variants() {
		names = append(names, im.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s has no variants to run", l.Slug)
	}
	return nil, &NotFoundError{fmt.Sprintf("%s has no variant %q (it has: %s)", l.Slug, name, NameList(names))}
}

// NotFoundError is a name given to a lesson that it does not have (a
// variant, a step to profile): the command line that gave it cannot be
// run as written.
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }

// RunVariant checks one impl at every check size of its problem: the
// REPL's "run NAME". Any variant a step of the lesson runs can be named.
func (l *Lesson) RunVariant(env *Env, name string) error {
	p, err := l.findVariant(name)
	if err != nil {
		return err
	}
	return (&CheckStep{Impls: []string{name}, Problem: p}).Do(env, l, "run")
}

// KernelNames lists every kernel in the lesson's kernel files, in file
// order: what "show kernel" can show.
func (l *Lesson) KernelNames() []string {
	var out []string
	for _, src := range l.kernelSources() {
		for _, n := range kernels.Names(src) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// ShowKernel prints the kernel name, from whichever of the lesson's kernel
// files declares it, with its resources; with no name it lists the names.
// A __device__ function the kernels call (tc_v3, or mbar_wait of the
// course header) shows too.
func (l *Lesson) ShowKernel(env *Env, name string) error {
	if name == "" {
		names := l.KernelNames()
		if len(names) == 0 {
			return fmt.Errorf("%s has no kernels", l.Slug)
		}
		env.printf("%s's kernels (show one with 'show kernel NAME'):\n  %s\n", l.Slug, strings.Join(names, "\n  "))
		return nil
	}
	f, _, err := l.fileDeclaring(name)
	if err != nil {
		f = l.fileDefining(name)
	}
	if f == "" {
		return err
	}
	return (&ShowKernel{Names: []string{name}, File: f}).Do(env, l, "")
}

// KernelReport says what the compiler made of the lesson's kernel name,
// in one line and without its source: its registers, shared memory and
// spills (what "show kernel" prints under the source), or why it is not
// compiled here. A notebook cell that already holds the source shows this.
func (l *Lesson) KernelReport(env *Env, name string) error {
	_, src, err := l.fileDeclaring(name)
	if err != nil {
		return err
	}
	img, err := env.Compile(src)
	if err != nil {
		if errors.Is(err, gpu.ErrNoGPU) {
			env.printf("%s, the course's, unchanged: not compiled here (%s)\n", name, shortReason(err))
			return nil
		}
		return err
	}
	body, _ := kernels.Function(src, name)
	if need := featureArch(body); need != "" && img.Arch != need {
		env.printf("%s, the course's, unchanged: its body is left out when compiled for %s, as here: it needs %s (%s)\n",
			name, img.Arch, need, archNames[need])
		return nil
	}
	res, ok := img.Kernel(name)
	if !ok {
		return fmt.Errorf("%s: NVRTC %s made no kernel %s of %s", l.Slug, img.NVRTC, name, src.Name)
	}
	env.printf("%s, the course's, unchanged: %s (NVRTC %s, %s)\n", name, resourceLine(res), img.NVRTC, img.Arch)
	return nil
}

// Message is err as a learner reads it, in the REPL, on the command line
// or in a notebook: without the "lessons: " that errors of this package
// (and of fusecmd) start with for Go callers, wherever a wrapping left it
// ("vector-add, step \"Benchmark\": lessons: …").
func Message(err error) string {
	return internalPrefix.ReplaceAllString(err.Error(), "$1")
}

// internalPrefix is a package prefix that means nothing to a learner, at
// the start of a message or after a colon.
var internalPrefix = regexp.MustCompile(`(^|: )(?:lessons|fusecmd): `)

// sizeSweeps runs the sweeps over sizes at env.Sizes, and nothing else: a
// learner who names sizes wants those measured, not the whole lesson. Each
// size goes to the sweeps whose sizes have as many numbers, and once to
// sweeps that would measure the same: a lesson whose causal sweep's sizes
// have a fifth number measures "4x16x4096x64x1" there, and "4x16x4096x64"
// once, though two of its sweeps take four numbers.
func (l *Lesson) sizeSweeps(env *Env) error {
	if err := l.CheckSizes(env.Sizes); err != nil {
		return err
	}
	given := env.Sizes
	type sweepKey struct {
		p     *Problem
		impls string
		n     int
	}
	done := map[sweepKey]bool{} // the sweeps run: their problem, impls and numbers in a size
	var first error
	for i := range l.Steps {
		a, sw, ok := l.sizeSweep(i)
		if !ok || len(sw.sizes) == 0 {
			continue
		}
		n := len(sw.sizes[0])
		var mine []Size
		for _, s := range given {
			if len(s) == n {
				mine = append(mine, s)
			}
		}
		key := sweepKey{sw.problem, strings.Join(sw.impls, "\x00"), n}
		if len(mine) == 0 || done[key] {
			continue
		}
		done[key] = true
		v := env.View
		v.Sizes = mine
		env.printf("\n── %s\n", l.Steps[i].Title)
		err := a.Do(env.WithView(v), l, l.Steps[i].Title)
		if errors.Is(err, ErrStopped) {
			return err
		}
		if err != nil && first == nil {
			first = fmt.Errorf("%s, step %q: %w", l.Slug, l.Steps[i].Title, err)
		}
	}
	return first
}

// CheckSizes says whether the lesson's sweeps over sizes can measure
// sizes, before anything runs: each size must have as many numbers as the
// sizes of one of its sweeps. The error gives the form they take, with the
// sweeps' own sizes as examples: "bench 2^20" in a lesson whose sizes are
// "1000x4096" learns to write two numbers.
func (l *Lesson) CheckSizes(sizes []Size) error {
	examples := map[int][]Size{} // a sweep's sizes, by how many numbers they have
	var arities []int
	for i := range l.Steps {
		_, sw, ok := l.sizeSweep(i)
		if !ok || len(sw.sizes) == 0 {
			continue
		}
		n := len(sw.sizes[0])
		if _, seen := examples[n]; !seen {
			arities = append(arities, n)
		}
		examples[n] = append(examples[n], sw.sizes...)
	}
	if len(arities) == 0 {
		return fmt.Errorf("%s has no sweep over sizes: 'bench' with no sizes runs its measurements as written", l.Slug)
	}
	slices.Sort(arities)
	for _, s := range sizes {
		if _, ok := examples[len(s)]; ok {
			continue
		}
		counts := make([]string, len(arities))
		var like []string // the first and last size of one form; the last of each of several
		for i, n := range arities {
			counts[i] = strconv.Itoa(n)
			ex := examples[n]
			if first := SizeArg(ex[0]); len(arities) == 1 && first != SizeArg(ex[len(ex)-1]) {
				like = append(like, first)
			}
			like = append(like, SizeArg(ex[len(ex)-1]))
		}
		noun := "numbers"
		if len(arities) == 1 && arities[0] == 1 {
			noun = "number"
		}
		return fmt.Errorf("size %s has %s, and %s measures sizes of %s %s, like %s",
			SizeArg(s), countNoun(len(s), "number"), l.Slug, strings.Join(counts, " or "), noun, listOr(like))
	}
	return nil
}

// countNoun is n and noun, with an s where n is not 1: "1 number", "2 numbers".
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// listOr joins items as "a", "a or b", "a, b or c".
func listOr(items []string) string { return listJoin(items, " or ") }

// listAnd joins items as "a", "a and b", "a, b and c".
func listAnd(items []string) string { return listJoin(items, " and ") }

// listJoin joins items with commas, and conj before the last.
func listJoin(items []string, conj string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + conj + items[len(items)-1]
}

// NameList joins names with commas for a message, quoting each name that
// holds a comma or a space, so that a list such as launches, "launches,
// each synchronised", graph reads as three names, and each can be typed
// back as it is shown.
func NameList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		if strings.ContainsAny(n, ", ") {
			n = strconv.Quote(n)
		}
		out[i] = n
	}
	return strings.Join(out, ", ")
}

// Measure runs every step that measures or checks something (all but the
// kernel listings and the exercise), without the prose: what
// "cudarepl bench" records. With env.Sizes set it runs only the sweeps
// over sizes, at those sizes.
func (l *Lesson) Measure(env *Env) error {
	if len(env.Sizes) > 0 {
		return l.sizeSweeps(env)
	}
	for _, s := range l.Steps {
		if s.Action == nil || s.Action.Kind() == "kernel" || s.Action.Kind() == "exercise" {
			continue
		}
		env.printf("\n── %s\n", s.Title)
		if err := s.Action.Do(env, l, s.Title); err != nil {
			return fmt.Errorf("%s, step %q: %w", l.Slug, s.Title, err)
		}
	}
	return l.checkUncovered(env)
}
