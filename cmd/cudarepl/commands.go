package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"cudarepl/lessons"
)

// cmdLessons lists the course.
func cmdLessons(stdout io.Writer) int {
	writeLessonList(stdout)
	return 0
}

func writeLessonList(w io.Writer) {
	for _, l := range lessons.All() {
		kinds := map[string]bool{}
		for _, s := range l.Steps {
			if s.Action != nil {
				kinds[s.Action.Kind()] = true
			}
		}
		extra := ""
		if l.Exercise != nil {
			extra = ", exercise"
		}
		fmt.Fprintf(w, "%2d  %-14s %-22s %d steps%s\n", l.Number, l.Slug, l.Title, len(l.Steps), extra)
	}
}

// commonFlags are the flags of run, check and bench.
type commonFlags struct {
	plots string
}

func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet("cudarepl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &commonFlags{}
	fs.StringVar(&c.plots, "plots", "", "folder for figures (default <workspace>/plots)")
	return fs, c
}

// parseArgs parses flags that may come before or after the positional
// arguments, as "cudarepl bench vector-add --json out.json" has them.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageError is a command line that cannot be run as written: exitUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// notJudged is a kernel that compiled, or could not be compiled here, but
// was never run: no GPU, or no NVRTC. It is neither a pass nor a failure,
// and has an exit status of its own (exitNotJudged), so that a script or a
// grader never takes it for a pass.
type notJudged struct{ v lessons.Verdict }

func (e notJudged) Error() string { return e.v.String() }

// The exit statuses, as the usage text gives them.
const (
	exitFailed    = 1 // a check or a verdict failed, or the command could not do its work
	exitUsage     = 2 // the command line cannot be run as written
	exitNotJudged = 3 // a kernel was compiled at most, never run: no GPU here (or no NVRTC)
)

// exitStatus prints err, if any, and returns the status to exit with. A
// verdict has printed its own line: the command only says it failed, or
// that it was not judged.
func exitStatus(stderr io.Writer, err error) int {
	var ue usageError
	var ve *lessons.VerdictError
	var nj notJudged
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, ue.msg)
		return exitUsage
	case errors.As(err, &ve):
		fmt.Fprintf(stderr, "cudarepl: %s does not pass\n", ve.Verdict.Kernel)
		return exitFailed
	case errors.As(err, &nj):
		fmt.Fprintf(stderr, "cudarepl: %s was not judged, neither passed nor failed (exit status %d)\n", nj.v.Kernel, exitNotJudged)
		return exitNotJudged
	}
	fmt.Fprintf(stderr, "cudarepl: %v\n", err)
	return exitFailed
}

// lessonArg finds the lesson named by the first positional argument.
func lessonArg(pos []string, usage string) (*lessons.Lesson, error) {
	if len(pos) < 1 {
		return nil, usageError{"usage: " + usage}
	}
	l, err := lessons.Find(pos[0])
	if err != nil {
		return nil, usageError{"cudarepl: " + err.Error()}
	}
	return l, nil
}

// cmdRun runs a lesson end to end.
func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlags("run", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	const usage = "cudarepl run <lesson> [--plots DIR]"
	if len(pos) > 1 {
		return usageError{"usage: " + usage}
	}
	l, err := lessonArg(pos, usage)
	if err != nil {
		return err
	}
	s, err := openSession(stdout, cf.plots)
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintln(stdout, s.banner())
	return l.RunAll(s.env)
}

// checkArgs is what check was asked to do, on the command line or in the
// REPL, which take the same flags.
type checkArgs struct {
	all      bool
	lesson   string // "" in the REPL means the open lesson
	file     string // a .cu file (or a .sched schedule) to judge
	variant  string // the kernel in file
	like     string // the version it is judged like
	sanitize string // a compute-sanitizer tool to run the checks under
}

const checkUsage = "check --all | check <lesson> [--variant NAME] | check <lesson> --kernel FILE.cu [--variant NAME] [--like VERSION]; each with [--sanitize memcheck|racecheck|synccheck|initcheck]"

// parseCheck reads check's arguments. A positional argument that ends in
// .cu (or .sched, lesson 3's schedules) is the file to judge, as in "check
// mine.cu"; another is the lesson.
// prefix starts the usage line: "cudarepl " on the command line.
func parseCheck(args []string, prefix string, stderr io.Writer) (checkArgs, error) {
	fs, _ := newFlags("check", stderr)
	var c checkArgs
	fs.BoolVar(&c.all, "all", false, "check every lesson")
	fs.StringVar(&c.file, "kernel", "", "a .cu file to judge instead of the lesson's own versions (or lesson 3's .sched schedule)")
	fs.StringVar(&c.variant, "variant", "", "with --kernel, the kernel in the file to judge (default: the exercise's, or the file's one kernel that fits); without, the one version of the lesson to check")
	fs.StringVar(&c.like, "like", "", "the version it is judged and launched like (default: the exercise's)")
	fs.StringVar(&c.sanitize, "sanitize", "", "run the checks under compute-sanitizer: memcheck, racecheck, synccheck or initcheck")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return c, usageError{err.Error()}
	}
	for _, p := range pos {
		switch {
		case (strings.HasSuffix(p, ".cu") || strings.HasSuffix(p, ".sched")) && c.file == "":
			c.file = p
		case c.lesson == "":
			c.lesson = p
		default:
			return c, usageError{"usage: " + prefix + checkUsage}
		}
	}
	if c.all && (c.lesson != "" || c.file != "" || c.variant != "") || c.like != "" && c.file == "" {
		return c, usageError{"usage: " + prefix + checkUsage}
	}
	return c, nil
}

// oneVersion is the command line that lists the checks of one version of
// lesson slug (lessons.View.OneVersion).
func oneVersion(slug, variant string) string {
	return "cudarepl check " + slug + " --variant " + shellWord(variant)
}

// shellWord is s as one word of a command line: quoted where it holds
// anything but letters, digits and _-.+/ (a space, a parenthesis).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.+/") == "" {
		return s
	}
	return strconv.Quote(s)
}

// cmdCheck checks lessons, or judges a learner's kernel file.
func cmdCheck(args []string, stdout, stderr io.Writer) error {
	c, err := parseCheck(args, "cudarepl ", stderr)
	if err != nil {
		return err
	}
	if !c.all && c.lesson == "" {
		return usageError{"usage: cudarepl " + checkUsage}
	}
	s, err := openSession(stdout, "")
	if err != nil {
		return err
	}
	defer s.close()
	return runCheck(s.env, c, stdout)
}

// runCheck does what check was asked, in env, for the command line and the
// REPL alike.
func runCheck(env *lessons.Env, c checkArgs, out io.Writer) error {
	targets := lessons.All()
	if !c.all {
		l, err := lessons.Find(c.lesson)
		if err != nil {
			return usageError{"cudarepl: " + err.Error()}
		}
		targets = []*lessons.Lesson{l}
	}
	if c.sanitize != "" {
		return env.Sanitize(c.sanitize, func(env *lessons.Env) error { return checkTargets(env, targets, c, out) })
	}
	return checkTargets(env, targets, c, out)
}

func checkTargets(env *lessons.Env, targets []*lessons.Lesson, c checkArgs, out io.Writer) error {
	switch {
	case c.file != "":
		return judgeFile(env, targets[0], c, out)
	case c.variant != "":
		return targets[0].RunVariant(env, c.variant)
	}
	failed := 0
	for _, l := range targets {
		if len(targets) > 1 {
			fmt.Fprintf(out, "── %d %s\n", l.Number, l.Slug)
		}
		err := l.CheckAll(env)
		if errors.Is(err, lessons.ErrStopped) {
			return err // Ctrl-C: the lessons after this one are not checked
		}
		if err != nil {
			fmt.Fprintf(out, "FAILED: %v\n", err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d lessons failed their checks", failed, len(targets))
	}
	if !env.Live() {
		fmt.Fprintf(out, "replay mode: the checks above are the recorded ones; nothing ran on a GPU\n")
	}
	return nil
}

// judgeFile compiles c.file and judges its kernel like a version of l.
func judgeFile(env *lessons.Env, l *lessons.Lesson, c checkArgs, out io.Writer) error {
	code, err := os.ReadFile(c.file)
	if err != nil {
		return usageError{"cudarepl: " + err.Error()}
	}
	v, err := env.Judge(l, lessons.Submission{File: filepath.Base(c.file), Code: string(code), Kernel: c.variant, Like: c.like})
	switch {
	case err != nil:
		return usageError{"cudarepl: " + err.Error()}
	case v.Judged && !v.Passed():
		return &lessons.VerdictError{Verdict: v}
	case !v.Judged:
		return notJudged{v}
	}
	return nil
}

// cmdBench measures a lesson and can write the results as JSON.
func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlags("bench", stderr)
	jsonPath := fs.String("json", "", "write the results to this file")
	step := fs.Int("step", 0, "measure only this step (from 1), one that measures or checks")
	rounds := fs.Int("rounds", 0, "measure every point of a sweep `N` times, a round at a time, and give ratios to a baseline as the median of the rounds' (default 3 for a ladder sweep, else 1)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	l, err := lessonArg(pos, "cudarepl bench <lesson> [sizes…] [--step N] [--rounds N] [--json FILE] [--plots DIR]")
	if err != nil {
		return err
	}
	if *rounds < 0 {
		return usageError{fmt.Sprintf("cudarepl: --rounds %d: a sweep is measured in 1 round or more", *rounds)}
	}
	measure := l.Measure
	if *step != 0 {
		if *step < 1 || *step > len(l.Steps) {
			return usageError{fmt.Sprintf("cudarepl: --step %d: %s has steps 1 to %d", *step, l.Slug, len(l.Steps))}
		}
		st := l.Steps[*step-1]
		// The steps a whole bench runs (Lesson.Measure): all but listings
		// and the exercise.
		if st.Action == nil || st.Action.Kind() == "kernel" || st.Action.Kind() == "exercise" {
			return usageError{fmt.Sprintf("cudarepl: --step %d: %q measures nothing (bench runs the steps that measure or check)", *step, st.Title)}
		}
		measure = func(env *lessons.Env) error { return st.Action.Do(env, l, st.Title) }
	}
	sizes, err := lessons.ParseSizes(pos[1:])
	if err != nil {
		return usageError{"cudarepl: " + err.Error()}
	}
	s, err := openSession(stdout, cf.plots)
	if err != nil {
		return err
	}
	defer s.close()
	if *jsonPath != "" && !s.env.Live() {
		return fmt.Errorf("--json: no GPU here (%v), so nothing would be measured", s.env.NoGPU)
	}
	v := s.env.View
	v.Sizes, v.Rounds = sizes, *rounds
	fmt.Fprintln(stdout, s.banner())
	err = measure(s.env.WithView(v))
	return saveResults(*jsonPath, s.env.Results, err, stdout)
}

// saveResults writes set to path, where path is set and set holds
// results, and says so on out; after a failure too (err, returned with
// any error of the writing), so that a long run is not lost.
func saveResults(path string, set lessons.ResultSet, err error, out io.Writer) error {
	if path == "" || len(set.Results) == 0 {
		return err
	}
	if werr := lessons.WriteResults(path, set); werr != nil {
		return errors.Join(err, werr)
	}
	fmt.Fprintf(out, "results: %s (%d)\n", path, len(set.Results))
	return err
}

// profileArgs is what profile was asked to do, on the command line or in
// the REPL, which take the same flags.
type profileArgs struct {
	lesson   string // "" in the REPL means the open lesson
	variants []string
	step     int
	file     string // a learner's .cu file, profiled beside the version it is judged like
	kernel   string // the kernel in file
	like     string
	json     string // write the profile's results here
}

// profileUsage is profile's two forms, each after prefix ("cudarepl " on
// the command line; in the REPL the lesson is the open one).
func profileUsage(prefix string) string {
	if prefix == "" {
		return "profile [variant…] [--step N] [--json FILE] | profile --kernel FILE.cu [--variant NAME] [--like VERSION]"
	}
	return prefix + "profile <lesson> [variant…] [--step N] [--json FILE] | " + prefix + "profile <lesson> --kernel FILE.cu [--variant NAME] [--like VERSION]"
}

// parseProfile reads profile's arguments: the lesson (unless inREPL), then
// variants; a positional argument ending in .cu is the file to profile.
func parseProfile(args []string, inREPL bool, stderr io.Writer) (profileArgs, error) {
	fs, _ := newFlags("profile", stderr)
	var p profileArgs
	fs.IntVar(&p.step, "step", 0, "profile only this step (from 1), a sweep")
	fs.StringVar(&p.file, "kernel", "", "a .cu file whose kernel to profile beside the version it is judged like")
	fs.StringVar(&p.kernel, "variant", "", "the kernel in --kernel to profile (default: the exercise's, or the file's one kernel that fits)")
	fs.StringVar(&p.like, "like", "", "the version it is launched like and profiled beside (default: the exercise's)")
	fs.StringVar(&p.json, "json", "", "write the profile's results to this file")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return p, usageError{err.Error()}
	}
	prefix := "cudarepl "
	if inREPL {
		prefix = ""
	}
	for _, a := range pos {
		switch {
		case strings.HasSuffix(a, ".cu") && p.file == "":
			p.file = a
		case !inREPL && p.lesson == "":
			p.lesson = a
		default:
			p.variants = append(p.variants, a)
		}
	}
	if !inREPL && p.lesson == "" || (p.kernel != "" || p.like != "") && p.file == "" || p.file != "" && (p.variants != nil || p.step != 0) {
		return p, usageError{"usage: " + profileUsage(prefix)}
	}
	return p, nil
}

// cmdProfile profiles a lesson's versions under Nsight Compute.
func cmdProfile(args []string, stdout, stderr io.Writer) error {
	p, err := parseProfile(args, false, stderr)
	if err != nil {
		return err
	}
	l, err := lessons.Find(p.lesson)
	if err != nil {
		return usageError{"cudarepl: " + err.Error()}
	}
	s, err := openSession(stdout, "")
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintln(stdout, s.banner())
	return runProfile(s.env, l, p, stdout)
}

// runProfile does what profile was asked, in env, for the command line
// and the REPL alike.
func runProfile(env *lessons.Env, l *lessons.Lesson, p profileArgs, out io.Writer) error {
	if p.json != "" && !env.Live() {
		return fmt.Errorf("--json: no GPU here (%v), so nothing would be profiled", env.NoGPU)
	}
	o := lessons.ProfileOptions{Variants: p.variants, Step: p.step}
	if p.step < 0 || p.step > len(l.Steps) {
		return usageError{fmt.Sprintf("cudarepl: --step %d: %s has steps 1 to %d", p.step, l.Slug, len(l.Steps))}
	}
	if p.file != "" {
		code, err := os.ReadFile(p.file)
		if err != nil {
			return usageError{"cudarepl: " + err.Error()}
		}
		o.Mine = &lessons.Submission{File: filepath.Base(p.file), Code: string(code), Kernel: p.kernel, Like: p.like}
	}
	err := env.Profile(l, o)
	var set lessons.ResultSet
	for _, r := range env.Results.Results {
		if r.Kind == "profile" && r.Lesson == l.Slug {
			set.Results = append(set.Results, r)
		}
	}
	return saveResults(p.json, set, err, out)
}
