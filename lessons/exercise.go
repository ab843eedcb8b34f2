package lessons

import (
	"fmt"
	"os"
	"path/filepath"
)

// Exercise is a kernel handed to the learner with a part left out. Their
// copy lives in the workspace, never in the embedded source, and is judged
// exactly as the lesson's own versions are. An exercise with a Plan is not
// a kernel but a plan of the work in a language of the lesson's own, such
// as lesson 3's schedule of streams and events.
type Exercise struct {
	File    string // the copy's file name, e.g. "vadd_exercise.cu"
	Kernel  string // the kernel the learner completes, e.g. "vadd_exercise"
	Like    string // the version it must match and is launched as, e.g. "vadd_v1"
	Starter string // the source handed out: the folder's exercise file (Def.Files) unless set
	Task    string // one paragraph: what to fill in
	// Bench, if set, is the size a kernel that passes is timed at, beside
	// the version it is judged like: correct is not the same as fast.
	Bench Size
	// Fast, if set, is a speed a kernel that passes its checks must also
	// reach at Bench to pass, where the lesson is about speed. Under
	// compute-sanitizer speed is not judged.
	Fast *Speed

	// Plan, if set, makes the exercise a plan of the work rather than a
	// kernel (a Plans, for plans of one type): files named with File's
	// extension are read into a plan, which then runs as Like, checked and
	// timed as a kernel would be.
	Plan Planner
	// What is what the learner writes, for messages: "kernel" when empty.
	What string
}

// Speed is how fast an exercise's kernel must run: at least Min of the
// throughput of Against, a version of the problem timed beside it, or of
// the problem's measured ceiling (such as the copy) where Against is "".
type Speed struct {
	Against string  // a version of the problem; "" for its ceiling
	Min     float64 // the least share of Against's throughput that passes
	// Why, if set, is what a correct kernel below Min most likely does
	// wrong, in the lesson's words, said after the figures.
	Why string
}

// Planner makes an Exercise a plan of the work (Exercise.Plan): a Plans,
// for plans of some type.
type Planner interface {
	read(code string) (plan, error)
}

// Plans reads a learner's plan of the work, of type P, for an exercise
// that is not a kernel (lesson 3's schedule of streams and events). The
// plan runs as the version the exercise is judged like: that version's
// case asks Plans.In for it and builds the version's ops from it.
type Plans[P fmt.Stringer] struct {
	// Read reads the learner's file into a plan (whose String says what
	// it does, in one line), or says why it is wrong, naming the line.
	Read func(code string) (P, error)
	// Show, if set, runs after a plan passes its checks and is timed, to
	// show what it did (lesson 3 draws the learner's timeline).
	Show func(env *Env, l *Lesson, plan P) error
}

// plan is a learner's plan as the framework carries it, whatever its type.
type plan struct {
	fmt.Stringer                                 // the plan, which Plans.In gives back
	show         func(env *Env, l *Lesson) error // Plans.Show of it; nil for none
}

func (ps Plans[P]) read(code string) (plan, error) {
	p, err := ps.Read(code)
	if err != nil {
		return plan{}, err
	}
	pl := plan{Stringer: p}
	if ps.Show != nil {
		pl.show = func(env *Env, l *Lesson) error { return ps.Show(env, l, p) }
	}
	return pl, nil
}

// In returns the learner's plan that impl runs, where it runs one: the
// case builds impl's ops from it in place of the version's own.
func (ps Plans[P]) In(impl Impl) (P, bool) {
	p, ok := impl.plan.(P)
	return p, ok
}

// starterFile is the name of the starter in the lesson's folder:
// "exercise" with File's extension, e.g. exercise.cu.
func (x *Exercise) starterFile() string { return "exercise" + filepath.Ext(x.File) }

// PlanFile reports whether a file called name is one of x's plans, read
// by Plan rather than compiled: x reads plans, and name has File's
// extension.
func (x *Exercise) PlanFile(name string) bool {
	return x != nil && x.Plan != nil && filepath.Ext(name) == filepath.Ext(x.File)
}

// plans reports whether s is for x's Plan rather than a kernel: a plan
// file that names no kernel and no other version to judge it like.
func (x *Exercise) plans(s Submission) bool {
	return x.PlanFile(s.File) && s.Kernel == "" && (s.Like == "" || s.Like == x.Like)
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
func (*ExerciseStep) Kind() string { return "exercise" }

// Do writes the learner's copy and says what to do with it.
func (*ExerciseStep) Do(env *Env, l *Lesson, step string) error {
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
