package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"cudarepl/gpu"
	"cudarepl/kernels"
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

// usageError is a command line that cannot be run as written: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitStatus prints err, if any, and returns the status to exit with.
func exitStatus(stderr io.Writer, err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, ue.msg)
		return 2
	}
	fmt.Fprintf(stderr, "cudarepl: %v\n", err)
	return 1
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

// cmdCheck checks lessons, or judges a learner's kernel file.
func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlags("check", stderr)
	all := fs.Bool("all", false, "check every lesson")
	file := fs.String("kernel", "", "a .cu file to judge instead of the lesson's own versions")
	variant := fs.String("variant", "", "the kernel in --kernel to judge (default: the exercise's, or the file's only kernel)")
	like := fs.String("like", "", "the version it is judged and launched like (default: the exercise's)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	const usage = "cudarepl check --all | cudarepl check <lesson> [--kernel FILE.cu [--variant NAME] [--like VERSION]]"
	targets := lessons.All()
	if !*all || len(pos) > 0 || *file != "" {
		if *all || len(pos) != 1 {
			return usageError{"usage: " + usage}
		}
		l, err := lessonArg(pos, usage)
		if err != nil {
			return err
		}
		targets = []*lessons.Lesson{l}
	}
	s, err := openSession(stdout, cf.plots)
	if err != nil {
		return err
	}
	defer s.close()
	if *file != "" {
		return judgeFile(s.env, targets[0], *file, *variant, *like, stdout)
	}
	failed := 0
	for _, l := range targets {
		fmt.Fprintf(stdout, "── %d %s\n", l.Number, l.Slug)
		if err := l.CheckAll(s.env); err != nil {
			fmt.Fprintf(stdout, "FAILED: %v\n", err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d lessons failed their checks", failed, len(targets))
	}
	if !s.env.Live() {
		fmt.Fprintf(stdout, "replay mode: the checks above are the recorded ones; nothing ran on a GPU\n")
	}
	return nil
}

// judgeFile compiles path and judges its kernel like a version of l.
func judgeFile(env *lessons.Env, l *lessons.Lesson, path, kernel, like string, stdout io.Writer) error {
	code, err := os.ReadFile(path)
	if err != nil {
		return usageError{"cudarepl: " + err.Error()}
	}
	src := gpu.Source{Name: filepath.Base(path), Code: string(code)}
	kernel, like, err = judgeTarget(l, src, kernel, like)
	if err != nil {
		return usageError{"cudarepl: " + err.Error()}
	}
	_, err = lessons.Judge(env, l, src, kernel, like)
	switch {
	case errors.Is(err, lessons.ErrNeedsGPU):
		fmt.Fprintf(stdout, "%v\n", err)
		return nil
	case err != nil:
		fmt.Fprintf(stdout, "FAILED: %v\n", err)
		return fmt.Errorf("%s does not pass: %w", kernel, err)
	}
	fmt.Fprintf(stdout, "%s passes every check %s passes.\n", kernel, like)
	return nil
}

// judgeTarget picks the kernel to judge and the version to judge it like.
func judgeTarget(l *lessons.Lesson, src gpu.Source, kernel, like string) (string, string, error) {
	if like == "" && l.Exercise != nil {
		like = l.Exercise.Like
	}
	if like == "" {
		return "", "", fmt.Errorf("%s has no exercise: say which version to judge against with --like", l.Slug)
	}
	if kernel == "" {
		names := kernels.Names(src)
		switch {
		case l.Exercise != nil && contains(names, l.Exercise.Kernel):
			kernel = l.Exercise.Kernel
		case len(names) == 1:
			kernel = names[0]
		case len(names) == 0:
			return "", "", fmt.Errorf("%s declares no __global__ kernel", src.Name)
		default:
			return "", "", fmt.Errorf("%s declares %s: say which with --variant", src.Name, strings.Join(names, ", "))
		}
	}
	return kernel, like, nil
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

// cmdBench measures a lesson and can write the results as JSON.
func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlags("bench", stderr)
	jsonPath := fs.String("json", "", "write the results to this file")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	l, err := lessonArg(pos, "cudarepl bench <lesson> [sizes…] [--json FILE] [--plots DIR]")
	if err != nil {
		return err
	}
	sizes, err := parseSizes(pos[1:])
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
	s.env.Sizes = sizes
	fmt.Fprintln(stdout, s.banner())
	err = l.Measure(s.env)
	if *jsonPath != "" && len(s.env.Results.Results) > 0 {
		// Written even after a failure, so that a long run is not lost.
		if werr := lessons.WriteResults(*jsonPath, s.env.Results); werr != nil {
			return errors.Join(err, werr)
		}
		fmt.Fprintf(stdout, "results: %s (%d)\n", *jsonPath, len(s.env.Results.Results))
	}
	return err
}
