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
	"text/tabwriter"

	"cudarepl/lessons"
)

// cmdLessons lists the course.
func cmdLessons(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return extraArgs("lessons", args, "cudarepl ")
	}
	writeLessonList(stdout)
	return nil
}

// extraArgs says that command, which takes no arguments, was given some:
// none is ignored silently. prefix is "cudarepl " on the command line.
func extraArgs(command string, args []string, prefix string) error {
	return usageError{fmt.Sprintf("%s takes no arguments, and was given %s: type '%s%s'", command, quoteArgs(args), prefix, command)}
}

// quoteArgs is args as a message shows them: each quoted, the whole cut
// short where it is long.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(clip(a, 40))
	}
	return clip(strings.Join(q, " "), 80)
}

// clip is s cut to at most n characters, ending in "…" where it was cut:
// a message quotes what was typed, and a line can be thousands long.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// writeLessonList lists the lessons in columns as wide as their longest
// entries.
func writeLessonList(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lessons.All() {
		extra := ""
		if l.Exercise != nil {
			extra = ", exercise"
		}
		fmt.Fprintf(tw, "%2d\t%s\t%s\t%2d steps%s\n", l.Number, l.Slug, l.Title, len(l.Steps), extra)
	}
	tw.Flush()
}

// usageError is a command line that cannot be run as written: exitUsage.
// Its message reads alone: the command line puts "cudarepl: " before it,
// unless it is a "usage: …" line, and the REPL puts "error: ".
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
		if strings.HasPrefix(ue.msg, "usage: ") {
			fmt.Fprintln(stderr, ue.msg)
		} else {
			fmt.Fprintf(stderr, "cudarepl: %s\n", ue.msg)
		}
		return exitUsage
	case errors.As(err, &ve):
		fmt.Fprintf(stderr, "cudarepl: %s does not pass\n", ve.Verdict.Kernel)
		return exitFailed
	case errors.As(err, new(*lessons.NotFoundError)):
		fmt.Fprintf(stderr, "cudarepl: %s\n", lessons.Message(err))
		return exitUsage
	case errors.As(err, &nj):
		fmt.Fprintf(stderr, "cudarepl: %s was not judged, neither passed nor failed (exit status %d)\n", nj.v.Kernel, exitNotJudged)
		return exitNotJudged
	}
	fmt.Fprintf(stderr, "cudarepl: %s\n", lessons.Message(err))
	return exitFailed
}

// lessonArg finds the lesson named by the first positional argument.
func lessonArg(pos []string, usage string) (*lessons.Lesson, error) {
	if len(pos) < 1 {
		return nil, usageError{"usage: " + usage}
	}
	l, err := lessons.Find(pos[0])
	if err != nil {
		return nil, usageError{lessons.Message(err)}
	}
	return l, nil
}

// runFlags are run's flags.
func runFlags(plots *string) *flag.FlagSet {
	fs := newFlags("run")
	plotsFlag(fs, plots)
	return fs
}

// cmdRun runs a lesson end to end.
func cmdRun(args []string, stdout, stderr io.Writer) error {
	var plots string
	fs := runFlags(&plots)
	pos, err := parseArgs(fs, args, "cudarepl help")
	if err != nil {
		return err
	}
	const usage = "cudarepl run <lesson> [--plots DIR]"
	if len(pos) > 1 {
		return usageError{"usage: " + usage}
	}
	l, err := lessonArg(pos, usage)
	if err != nil {
		return err
	}
	s, err := openSession(stdout, expandHome(plots))
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

// checkFlags are check's flags, read into c.
func checkFlags(c *checkArgs) *flag.FlagSet {
	fs := newFlags("check")
	fs.BoolVar(&c.all, "all", false, "check every lesson")
	fs.StringVar(&c.file, "kernel", "", "judge the kernel in `FILE.cu` instead of the lesson's own versions (in lesson 3, a .sched schedule)")
	fs.StringVar(&c.variant, "variant", "", "check the lesson's version `NAME` alone; with --kernel, the kernel in the file to judge (default: the exercise's, or the file's one kernel that fits)")
	fs.StringVar(&c.like, "like", "", "judge and launch it like the lesson's `VERSION` (default: the exercise's)")
	fs.StringVar(&c.sanitize, "sanitize", "", "run the checks under compute-sanitizer's `TOOL`: memcheck, racecheck, synccheck or initcheck")
	return fs
}

// parseCheck reads check's arguments. A positional argument that ends in
// .cu (or .sched, lesson 3's schedules) is the file to judge, as in "check
// mine.cu"; another is the lesson. prefix starts the usage line and the
// help command: "cudarepl " on the command line.
func parseCheck(args []string, prefix string) (checkArgs, error) {
	var c checkArgs
	pos, err := parseArgs(checkFlags(&c), args, prefix+"help")
	if err != nil {
		return c, err
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
	c.file = expandHome(c.file)
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
	c, err := parseCheck(args, "cudarepl ")
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
			return usageError{lessons.Message(err)}
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
		return usageError{err.Error()}
	}
	v, err := env.Judge(l, lessons.Submission{File: filepath.Base(c.file), Code: string(code), Kernel: c.variant, Like: c.like})
	switch {
	case err != nil:
		return usageError{lessons.Message(err)}
	case v.Judged && !v.Passed():
		return &lessons.VerdictError{Verdict: v}
	case !v.Judged:
		return notJudged{v}
	}
	return nil
}

// benchArgs is what bench was asked to do.
type benchArgs struct {
	json, plots string
	step        int
	rounds      int
}

// benchFlags are bench's flags, read into b.
func benchFlags(b *benchArgs) *flag.FlagSet {
	fs := newFlags("bench")
	fs.StringVar(&b.json, "json", "", "write the results to `FILE` (on a GPU: without one nothing is measured)")
	fs.IntVar(&b.step, "step", 0, "measure only step `N` of the lesson (from 1), one that measures or checks")
	fs.IntVar(&b.rounds, "rounds", 0, "measure every point of a sweep `N` times, a round at a time, and give ratios to a baseline as the median of the rounds' (default 3 for a ladder sweep, else 1)")
	plotsFlag(fs, &b.plots)
	return fs
}

// cmdBench measures a lesson and can write the results as JSON.
func cmdBench(args []string, stdout, stderr io.Writer) error {
	var b benchArgs
	pos, err := parseArgs(benchFlags(&b), args, "cudarepl help")
	if err != nil {
		return err
	}
	l, err := lessonArg(pos, "cudarepl bench <lesson> [sizes…] [--step N] [--rounds N] [--json FILE] [--plots DIR]")
	if err != nil {
		return err
	}
	if b.rounds < 0 {
		return usageError{fmt.Sprintf("--rounds %d: a sweep is measured in 1 round or more", b.rounds)}
	}
	measure := l.Measure
	if b.step != 0 {
		if b.step < 1 || b.step > len(l.Steps) {
			return usageError{fmt.Sprintf("--step %d: %s has steps 1 to %d", b.step, l.Slug, len(l.Steps))}
		}
		st := l.Steps[b.step-1]
		// The steps a whole bench runs (Lesson.Measure): all but listings
		// and the exercise.
		if st.Action == nil || st.Action.Kind() == "kernel" || st.Action.Kind() == "exercise" {
			return usageError{fmt.Sprintf("--step %d: %q measures nothing (bench runs the steps that measure or check)", b.step, st.Title)}
		}
		measure = func(env *lessons.Env) error { return st.Action.Do(env, l, st.Title) }
	}
	sizes, err := lessons.ParseSizes(pos[1:])
	if err != nil {
		return usageError{err.Error()}
	}
	if len(sizes) > 0 {
		if err := l.CheckSizes(sizes); err != nil {
			return usageError{err.Error()}
		}
	}
	s, err := openSession(stdout, expandHome(b.plots))
	if err != nil {
		return err
	}
	defer s.close()
	if b.json != "" && !s.env.Live() {
		return fmt.Errorf("--json: no GPU here (%v), so nothing would be measured", s.env.NoGPU)
	}
	v := s.env.View
	v.Sizes, v.Rounds = sizes, b.rounds
	fmt.Fprintln(stdout, s.banner())
	if len(sizes) > 0 && !s.env.Live() {
		s.env.ReplayNotice()
		fmt.Fprintln(stdout, replaySizesNote(pos[1:]))
	}
	err = measure(s.env.WithView(v))
	return saveResults(expandHome(b.json), s.env.Results, err, stdout)
}

// replaySizesNote says that sizes given in replay are not what is shown,
// after the notice of why there is no GPU (Env.ReplayNotice).
func replaySizesNote(sizes []string) string {
	return fmt.Sprintf("Replay shows the sizes recorded on the reference GPU; %s would be measured on a GPU.", clip(strings.Join(sizes, ", "), 60))
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

// profileFlags are profile's flags, read into p.
func profileFlags(p *profileArgs) *flag.FlagSet {
	fs := newFlags("profile")
	fs.IntVar(&p.step, "step", 0, "profile only step `N` (from 1), a sweep")
	fs.StringVar(&p.file, "kernel", "", "profile the kernel in `FILE.cu` beside the version it is judged like")
	fs.StringVar(&p.kernel, "variant", "", "the kernel in --kernel to profile, `NAME` (default: the exercise's, or the file's one kernel that fits)")
	fs.StringVar(&p.like, "like", "", "launch it like the lesson's `VERSION`, and profile it beside that (default: the exercise's)")
	fs.StringVar(&p.json, "json", "", "write the profile's results to `FILE`")
	return fs
}

// parseProfile reads profile's arguments: the lesson (unless inREPL), then
// variants; a positional argument ending in .cu is the file to profile.
func parseProfile(args []string, inREPL bool) (profileArgs, error) {
	prefix := "cudarepl "
	if inREPL {
		prefix = ""
	}
	var p profileArgs
	pos, err := parseArgs(profileFlags(&p), args, prefix+"help")
	if err != nil {
		return p, err
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
	p.file, p.json = expandHome(p.file), expandHome(p.json)
	return p, nil
}

// cmdProfile profiles a lesson's versions under Nsight Compute.
func cmdProfile(args []string, stdout, stderr io.Writer) error {
	p, err := parseProfile(args, false)
	if err != nil {
		return err
	}
	l, err := lessons.Find(p.lesson)
	if err != nil {
		return usageError{lessons.Message(err)}
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
		return usageError{fmt.Sprintf("--step %d: %s has steps 1 to %d", p.step, l.Slug, len(l.Steps))}
	}
	if p.file != "" {
		code, err := os.ReadFile(p.file)
		if err != nil {
			return usageError{err.Error()}
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
