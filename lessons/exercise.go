package lessons

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"cudarepl/gpu"
)

// Exercise is a kernel handed to the learner with a part left out. Their
// copy lives in the workspace, never in the embedded source, and is judged
// exactly as the lesson's own versions are.
type Exercise struct {
	File    string // the copy's file name, e.g. "vadd_exercise.cu"
	Kernel  string // the kernel the learner completes, e.g. "vadd_exercise"
	Like    string // the version it must match and is launched as, e.g. "vadd_v1"
	Starter string // the source handed out
	Task    string // one paragraph: what to fill in
}

// Path is where the learner's copy of x lives for lesson l.
func (x *Exercise) Path(env *Env, l *Lesson) string {
	ws := env.Workspace
	if ws == "" {
		ws = DefaultWorkspace()
	}
	return filepath.Join(ws, l.Slug, x.File)
}

// Prepare writes the starter copy unless the learner already has one, which
// is never overwritten. It returns the path and whether it was created.
func (x *Exercise) Prepare(env *Env, l *Lesson) (string, bool, error) {
	path := x.Path(env, l)
	if _, err := os.Stat(path); err == nil {
		return path, false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", false, fmt.Errorf("exercise: %w", err)
	}
	if err := os.WriteFile(path, []byte(x.Starter), 0o644); err != nil {
		return "", false, fmt.Errorf("exercise: %w", err)
	}
	return path, true, nil
}

// ExerciseStep hands out the exercise of the lesson.
type ExerciseStep struct{}

// Kind is "exercise".
func (ExerciseStep) Kind() string { return "exercise" }

// Do writes the learner's copy and says what to do with it.
func (ExerciseStep) Do(env *Env, l *Lesson, step string) error {
	x := l.Exercise
	if x == nil {
		return fmt.Errorf("lessons: %s has no exercise", l.Slug)
	}
	path, created, err := x.Prepare(env, l)
	if err != nil {
		return err
	}
	if created {
		env.printf("Your copy of the exercise: %s\n", path)
	} else {
		env.printf("Your copy of the exercise (kept as you left it): %s\n", path)
	}
	env.printf("%s\nEdit it (type 'edit'), then type 'check' to judge it against %s.\n", x.Task, x.Like)
	return nil
}

// ErrNeedsGPU says a learner's kernel compiled but could not be judged.
var ErrNeedsGPU = errors.New("judging a kernel needs a GPU; it compiled, which is as far as replay mode goes")

// Judge compiles the learner's kernel in src and checks it, launched as
// like, at the problem's check sizes: exactly the checks the lesson's own
// versions pass. A compile error comes back as a *gpu.CompileError.
func Judge(env *Env, l *Lesson, src gpu.Source, kernel, like string) ([]Result, error) {
	p := l.Problem
	if p == nil {
		return nil, fmt.Errorf("lessons: %s has nothing to check kernels against", l.Slug)
	}
	if _, err := p.impl(like); err != nil {
		return nil, err
	}
	img, err := env.Compile(src)
	if err != nil {
		return nil, err
	}
	res, ok := img.Kernel(kernel)
	if !ok {
		return nil, fmt.Errorf("lessons: %s has no kernel %q (declare it extern \"C\")", src.Name, kernel)
	}
	env.printf("%s compiled: %s\n", src.Name, resourceLine(res))
	if !env.Live() {
		return nil, ErrNeedsGPU
	}
	k, err := env.Kernel(src, kernel)
	if err != nil {
		return nil, err
	}
	impl := Impl{Name: kernel, Like: like}
	var out []Result
	var firstErr error
	for _, s := range p.CheckSizes {
		r, err := checkOnce(env, l, p, "check", impl, k, s)
		out = append(out, r)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	env.PrintTable(checkTable(out))
	return out, firstErr
}

func resourceLine(k gpu.KernelResources) string {
	return fmt.Sprintf("%d registers/thread, %d B static shared memory, %d B spilled", k.Registers, k.SharedStatic, k.SpillStores)
}
