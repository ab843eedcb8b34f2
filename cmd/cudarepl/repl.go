package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/chzyer/readline"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
)

// repl is the interactive session: the open lesson, its current step, and
// the GPU (or replay) everything runs in.
type repl struct {
	s      *session
	out    io.Writer
	lesson *lessons.Lesson
	step   int
	rl     *readline.Instance // nil when input is not a terminal
}

// command is one thing the REPL understands.
type command struct {
	name, args, short, long string
	run                     func(r *repl, args []string) error
}

// commands, in the order help lists them.
var commands []command

func init() {
	commands = []command{
		{"help", "[command]", "list the commands, or explain one", "", (*repl).help},
		{"lessons", "", "list the lessons", "", func(r *repl, _ []string) error { writeLessonList(r.out); return nil }},
		{"open", "<lesson>", "open a lesson at its first step", "A lesson is named by its slug, its number, or the start of its slug: 'open 2', 'open vector'.", (*repl).open},
		{"next", "", "go to the next step and run it", "", func(r *repl, _ []string) error { return r.goTo(r.step + 1) }},
		{"prev", "", "go to the previous step and run it", "", func(r *repl, _ []string) error { return r.goTo(r.step - 1) }},
		{"step", "<n>", "go to step n and run it", "", (*repl).stepCmd},
		{"show", "[kernel <variant>]", "show the step's prose again, or a kernel's source", "", (*repl).show},
		{"run", "[<variant>]", "run the step again, or check one variant", "With a variant, runs it once at every check size and checks every element against the CPU reference.", (*repl).runCmd},
		{"check", "[<file.cu>]", "check the lesson's versions, your exercise, or a file", "'check' checks every version of the lesson; at the exercise step it judges your copy instead. 'check FILE.cu' judges any file's kernel exactly as the lesson's versions are judged.", (*repl).check},
		{"bench", "[sizes…]", "run the lesson's sweeps (live) or show them (replay)", "Sizes may be written 1048576, 2^20, 1M, or 1000x1003x517. Ctrl-C stops a sweep and keeps what was measured.", (*repl).bench},
		{"plot", "", "draw the lesson's figures (PNG, SVG and here)", "Figures are drawn from this session's measurements where there are any, otherwise from the recorded ones, and say which.", (*repl).plot},
		{"edit", "", "edit your copy of the exercise, then check it", "Opens $VISUAL or $EDITOR on your copy (created from the lesson's starter if you have none), then compiles and judges it.", (*repl).edit},
		{"device", "", "describe the GPU", "", func(r *repl, _ []string) error { return r.device() }},
		{"mem", "", "show free and total GPU memory", "", (*repl).mem},
		{"quit", "", "leave (Ctrl-D also does)", "", nil},
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name || (name == "exit" && c.name == "quit") {
			return c, true
		}
	}
	return command{}, false
}

// runREPL runs the REPL on in until quit or end of input. interactive turns
// on the prompt, line editing, completion, history and progress bars.
func runREPL(in io.ReadCloser, out, errOut io.Writer, interactive bool, cfg *readline.Config) int {
	s, err := openSession(out, "")
	if err != nil {
		fmt.Fprintf(errOut, "cudarepl: %v\n", err)
		return 1
	}
	defer s.close()
	r := &repl{s: s, out: out}
	fmt.Fprintln(out, s.banner())
	fmt.Fprintln(out, "Type 'lessons' to see the course, 'open 1' to start, 'help' for the rest.")
	if !interactive {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		r.loop(func() (string, error) {
			if sc.Scan() {
				return sc.Text(), nil
			}
			return "", io.EOF
		})
		return 0
	}
	if cfg == nil {
		cfg = &readline.Config{}
	}
	cfg.Prompt = r.prompt()
	cfg.AutoComplete = r.completer()
	cfg.InterruptPrompt = "^C"
	cfg.EOFPrompt = "quit"
	if cfg.HistoryFile == "" {
		cfg.HistoryFile = historyFile()
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		fmt.Fprintf(errOut, "cudarepl: %v\n", err)
		return 1
	}
	defer rl.Close()
	r.rl = rl
	r.s.env.Out = rl.Stdout()
	r.out = rl.Stdout()
	r.s.env.Progress = progressBar(rl.Stderr())
	r.loop(func() (string, error) {
		rl.SetPrompt(r.prompt())
		return rl.Readline()
	})
	return 0
}

// historyFile is where the REPL keeps history across sessions.
func historyFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	dir = filepath.Join(dir, "cudarepl")
	if os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	return filepath.Join(dir, "history")
}

func (r *repl) prompt() string {
	if r.lesson == nil {
		return "cudarepl> "
	}
	return fmt.Sprintf("%s %d/%d> ", r.lesson.Slug, r.step+1, len(r.lesson.Steps))
}

// loop reads and runs commands until quit or end of input.
func (r *repl) loop(read func() (string, error)) {
	for {
		line, err := read()
		if errors.Is(err, readline.ErrInterrupt) {
			fmt.Fprintln(r.out, "(Ctrl-D or 'quit' leaves)")
			continue
		}
		if err != nil {
			return
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "quit" || fields[0] == "exit" {
			return
		}
		r.exec(fields)
	}
}

// exec runs one command. Ctrl-C while it runs cancels it, not the REPL.
func (r *repl) exec(fields []string) {
	c, ok := findCommand(fields[0])
	if !ok {
		fmt.Fprintf(r.out, "unknown command %q; type 'help' for the list\n", fields[0])
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			cancel()
		case <-done:
		}
	}()
	r.s.env.Ctx = ctx
	err := c.run(r, fields[1:])
	close(done)
	signal.Stop(sig)
	cancel()
	r.s.env.Ctx = nil
	switch {
	case errors.Is(err, lessons.ErrStopped):
		fmt.Fprintln(r.out, "stopped")
	case err != nil:
		fmt.Fprintf(r.out, "error: %v\n", err)
	}
}

func (r *repl) help(args []string) error {
	if len(args) > 0 {
		c, ok := findCommand(args[0])
		if !ok {
			return fmt.Errorf("no command %q; 'help' lists them", args[0])
		}
		fmt.Fprintf(r.out, "%s %s\n  %s\n", c.name, c.args, c.short)
		if c.long != "" {
			fmt.Fprintf(r.out, "  %s\n", c.long)
		}
		return nil
	}
	for _, c := range commands {
		fmt.Fprintf(r.out, "  %-8s %-20s %s\n", c.name, c.args, c.short)
	}
	return nil
}

// needLesson returns the open lesson, or says how to open one.
func (r *repl) needLesson() (*lessons.Lesson, error) {
	if r.lesson == nil {
		return nil, errors.New("no lesson is open: 'lessons' lists them, 'open 1' opens the first")
	}
	return r.lesson, nil
}

func (r *repl) open(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: open <lesson>")
	}
	l, err := lessons.Find(args[0])
	if err != nil {
		return err
	}
	r.lesson, r.step = l, 0
	l.Header(r.s.env)
	return r.goTo(0)
}

func (r *repl) goTo(i int) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	switch {
	case i < 0:
		return errors.New("this is the first step")
	case i >= len(l.Steps):
		return fmt.Errorf("that was the last step of %s; 'lessons' shows what comes next", l.Slug)
	}
	r.step = i
	return l.RunStep(r.s.env, i)
}

func (r *repl) stepCmd(args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: step <n>, n from 1 to %d", len(l.Steps))
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 || n > len(l.Steps) {
		return fmt.Errorf("step %q: %s has steps 1 to %d", args[0], l.Slug, len(l.Steps))
	}
	return r.goTo(n - 1)
}

func (r *repl) show(args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		s := l.Steps[r.step]
		fmt.Fprintf(r.out, "%d/%d %s\n\n%s\n", r.step+1, len(l.Steps), s.Title, s.Prose)
		return nil
	}
	if args[0] != "kernel" || len(args) != 2 {
		return errors.New("usage: show [kernel <variant>]")
	}
	return lessons.ShowKernel{Names: []string{args[1]}}.Do(r.s.env, l, l.Steps[r.step].Title)
}

func (r *repl) runCmd(args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	if len(args) == 1 {
		return l.RunVariant(r.s.env, args[0])
	}
	if len(args) > 1 {
		return errors.New("usage: run [<variant>]")
	}
	s := l.Steps[r.step]
	if s.Action == nil {
		return fmt.Errorf("step %d (%s) has nothing to run; 'next' moves on", r.step+1, s.Title)
	}
	return s.Action.Do(r.s.env, l, s.Title)
}

func (r *repl) check(args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	atExercise := l.Steps[r.step].Action != nil && l.Steps[r.step].Action.Kind() == "exercise"
	switch {
	case len(args) == 1:
		return r.judge(l, args[0])
	case len(args) > 1:
		return errors.New("usage: check [<file.cu>]")
	case atExercise:
		path, _, err := l.Exercise.Prepare(r.s.env, l)
		if err != nil {
			return err
		}
		return r.judge(l, path)
	}
	return l.CheckAll(r.s.env)
}

// judge compiles a learner's file and judges it like the exercise's version.
func (r *repl) judge(l *lessons.Lesson, path string) error {
	code, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	src := gpu.Source{Name: filepath.Base(path), Code: string(code)}
	kernel, like, err := judgeTarget(l, src, "", "")
	if err != nil {
		return err
	}
	_, err = lessons.Judge(r.s.env, l, src, kernel, like)
	if errors.Is(err, lessons.ErrNeedsGPU) {
		fmt.Fprintln(r.out, err)
		return nil
	}
	if err == nil {
		fmt.Fprintf(r.out, "%s passes every check %s passes.\n", kernel, like)
	}
	return err
}

func (r *repl) bench(args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	sizes, err := parseSizes(args)
	if err != nil {
		return err
	}
	r.s.env.Sizes = sizes
	defer func() { r.s.env.Sizes = nil }()
	return l.BenchAll(r.s.env)
}

func (r *repl) plot(args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	return l.Plot(r.s.env)
}

func (r *repl) edit(args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	if l.Exercise == nil {
		return fmt.Errorf("%s has no exercise", l.Slug)
	}
	path, _, err := l.Exercise.Prepare(r.s.env, l)
	if err != nil {
		return err
	}
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		return fmt.Errorf("set $EDITOR (for example: export EDITOR=nano), or edit %s yourself and type 'check %s'", path, path)
	}
	parts := strings.Fields(editor)
	cmd := exec.Command(parts[0], append(parts[1:], path)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %s: %w", editor, err)
	}
	return r.judge(l, path)
}

func (r *repl) device() error {
	if r.s.dev == nil {
		fmt.Fprintf(r.out, "%v\nreplay mode: lessons show results recorded on a reference GPU\n", r.s.env.NoGPU)
		return nil
	}
	for _, row := range r.s.dev.Info().Rows() {
		fmt.Fprintf(r.out, "  %-24s %s\n", row[0], row[1])
	}
	return nil
}

func (r *repl) mem(args []string) error {
	if r.s.dev == nil {
		fmt.Fprintf(r.out, "no GPU: %v\n", r.s.env.NoGPU)
		return nil
	}
	free, total, err := r.s.dev.MemInfo()
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "GPU memory: %.2f GiB free of %.2f GiB (%.2f GiB in use)\n",
		float64(free)/(1<<30), float64(total)/(1<<30), float64(total-free)/(1<<30))
	return nil
}

// completer completes commands, lesson names, variants and step numbers.
func (r *repl) completer() readline.AutoCompleter {
	slugs := func(string) []string {
		var out []string
		for _, l := range lessons.All() {
			out = append(out, l.Slug)
		}
		return out
	}
	variants := func(string) []string {
		if r.lesson == nil {
			return nil
		}
		var out []string
		for _, im := range r.lesson.Variants() {
			if !strings.Contains(im.Name, " ") {
				out = append(out, im.Name)
			}
		}
		if src, err := kernels.Source(r.lesson.Kernels); err == nil && r.lesson.Kernels != "" {
			for _, n := range kernels.Names(src) {
				if !contains(out, n) {
					out = append(out, n)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	steps := func(string) []string {
		if r.lesson == nil {
			return nil
		}
		var out []string
		for i := range r.lesson.Steps {
			out = append(out, strconv.Itoa(i+1))
		}
		return out
	}
	cuFiles := func(string) []string {
		m, _ := filepath.Glob("*.cu")
		return m
	}
	var items []readline.PrefixCompleterInterface
	for _, c := range commands {
		switch c.name {
		case "open":
			items = append(items, readline.PcItem("open", readline.PcItemDynamic(slugs)))
		case "run":
			items = append(items, readline.PcItem("run", readline.PcItemDynamic(variants)))
		case "show":
			items = append(items, readline.PcItem("show", readline.PcItem("kernel", readline.PcItemDynamic(variants))))
		case "step":
			items = append(items, readline.PcItem("step", readline.PcItemDynamic(steps)))
		case "check":
			items = append(items, readline.PcItem("check", readline.PcItemDynamic(cuFiles)))
		case "help":
			var sub []readline.PrefixCompleterInterface
			for _, c2 := range commands {
				sub = append(sub, readline.PcItem(c2.name))
			}
			items = append(items, readline.PcItem("help", sub...))
		default:
			items = append(items, readline.PcItem(c.name))
		}
	}
	return readline.NewPrefixCompleter(items...)
}

// progressBar draws "[█████░░░░░] 12/40 what" on one line of w.
func progressBar(w io.Writer) func(done, total int, what string) {
	return func(done, total int, what string) {
		if total <= 0 {
			return
		}
		if done >= total {
			fmt.Fprintf(w, "\r\033[K")
			return
		}
		const width = 24
		fill := width * done / total
		fmt.Fprintf(w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("█", fill), strings.Repeat("░", width-fill), done, total, what)
	}
}
