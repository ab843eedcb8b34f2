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

	"cudarepl/lessons"
	"cudarepl/lessons/fusecmd"
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
	run                     func(r *repl, env *lessons.Env, args []string) error
}

// commands, in the order help lists them.
var commands []command

func init() {
	commands = []command{
		{"help", "[command]", "list the commands, or explain one", "", func(r *repl, _ *lessons.Env, args []string) error { return r.help(args) }},
		{"lessons", "", "list the lessons", "", func(r *repl, _ *lessons.Env, _ []string) error { writeLessonList(r.out); return nil }},
		{"open", "<lesson>", "open a lesson at its first step", "A lesson is named by its slug, its number, or the start of its slug: 'open 2', 'open vector'.", (*repl).open},
		{"next", "", "go to the next step and run it", "", func(r *repl, env *lessons.Env, _ []string) error { return r.goTo(env, r.step+1) }},
		{"prev", "", "go to the previous step and run it", "", func(r *repl, env *lessons.Env, _ []string) error { return r.goTo(env, r.step-1) }},
		{"step", "<n>", "go to step n and run it", "", (*repl).stepCmd},
		{"show", "[kernel [<name>]]", "show the step's prose again, or a kernel's source", "'show kernel' lists the lesson's kernels; 'show kernel NAME' shows one with its registers and shared memory, or a __device__ helper the kernels call.", (*repl).show},
		{"run", "[<variant>]", "run the step again, or check one variant", "With a variant (any the lesson's steps run; quote a name with spaces or not), runs it once at every check size and checks every element against the CPU reference.", (*repl).runCmd},
		{"check", "[<file.cu>] [flags]", "check the lesson's versions, your exercise, or a file", "'check' checks every version of the lesson; at the exercise step it judges your copy instead. 'check FILE.cu' judges any file's kernel exactly as the lesson's versions are judged (in lesson 3, 'check FILE.sched' judges a schedule). The flags are the command line's: --all, --kernel FILE.cu, --variant NAME, --like VERSION, --sanitize memcheck|racecheck|synccheck|initcheck.", (*repl).check},
		{"bench", "[sizes…]", "run the lesson's sweeps (live) or show them (replay)", "Sizes may be written 1048576, 2^20, 1M, or 1000x1003x517; with sizes, only the sweeps over sizes run. In replay the recorded sizes are shown. Ctrl-C stops a sweep and keeps what was measured.", (*repl).bench},
		{"profile", "[variant…] [flags]", "show why each version is as fast as it is: hardware counters", "Runs each version of the lesson's sweeps (its ladders, and the widest sweep of each other problem) once under Nsight Compute (ncu) and shows two tables per sweep: memory (time, DRAM bytes beside the bytes the lesson predicts, sectors per load, L1 and L2 hit rates, bank conflicts) and compute (SM busy, instructions, occupancy and what limits it, tensor pipe, the top warp stalls). Without a GPU the profiles recorded with the lesson show; without ncu one line says what to install. The flags are the command line's: --step N, --json FILE; or --kernel FILE.cu [--variant NAME] [--like VERSION], which profiles your kernel beside the version it is like.", (*repl).profile},
		{"plot", "", "draw the lesson's figures (PNG, SVG and here)", "Figures are drawn from this session's measurements where there are any, otherwise from the recorded ones, and say which.", (*repl).plot},
		{"edit", "[kernel <name>]", "edit your copy of the exercise, or of a kernel, then check it", "Opens $VISUAL or $EDITOR on your copy of the exercise (created from the lesson's starter if you have none), then compiles and judges it. 'edit kernel NAME' does the same with your copy of one of the lesson's kernels, then checks it like the course's and times it beside it. Copies live in the workspace and are never overwritten.", (*repl).edit},
		{"fuse", "[--n SIZE] <expression>", "fuse an elementwise expression into one kernel, check it and time it", "Writes the expression over named fp32 inputs (+ - * /, numbers, and abs cos exp log max min pow relu sigmoid sin sqrt tanh) as one kernel and as one kernel an operation, compiles both with NVRTC, and on a GPU checks both against the expression in float64 and times them beside the device-to-device copy, at 2^26 elements unless --n says otherwise: 'fuse sigmoid(a + b*c)'.", (*repl).fuse},
		{"device", "", "describe the GPU", "", func(r *repl, env *lessons.Env, _ []string) error { return r.device(env) }},
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
		fields, err := splitLine(line)
		if err != nil {
			fmt.Fprintf(r.out, "error: %v\n", err)
			continue
		}
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
	v := r.s.env.View
	v.Ctx = ctx // this command's Ctrl-C, carried by a copy of the session's env
	v.OneVersion = r.oneVersion
	err := c.run(r, r.s.env.WithView(v), fields[1:])
	close(done)
	signal.Stop(sig)
	cancel()
	switch {
	case errors.Is(err, lessons.ErrStopped):
		fmt.Fprintln(r.out, "stopped")
	case errors.As(err, new(*lessons.VerdictError)):
		// The verdict's line has said it.
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

func (r *repl) open(env *lessons.Env, args []string) error {
	if len(args) != 1 {
		return errors.New("usage: open <lesson>")
	}
	l, err := lessons.Find(args[0])
	if err != nil {
		return err
	}
	r.lesson, r.step = l, 0
	l.Header(env)
	return r.goTo(env, 0)
}

func (r *repl) goTo(env *lessons.Env, i int) error {
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
	return l.RunStep(env, i)
}

func (r *repl) stepCmd(env *lessons.Env, args []string) error {
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
	return r.goTo(env, n-1)
}

func (r *repl) show(env *lessons.Env, args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		s := l.Steps[r.step]
		fmt.Fprintf(r.out, "%d/%d %s\n\n%s\n", r.step+1, len(l.Steps), s.Title, s.Prose)
		return nil
	}
	if args[0] != "kernel" || len(args) > 2 {
		return errors.New("usage: show [kernel [<name>]]")
	}
	return l.ShowKernel(env, strings.Join(args[1:], " "))
}

// oneVersion is what lists the checks of one version of lesson slug, typed
// here: 'run' where the lesson is open, else 'check' with --variant.
func (r *repl) oneVersion(slug, variant string) string {
	if r.lesson != nil && r.lesson.Slug == slug {
		return "run " + variant
	}
	return "check " + slug + " --variant " + shellWord(variant)
}

func (r *repl) runCmd(env *lessons.Env, args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	if len(args) > 0 {
		// A name with spaces ("conv alone") may be typed quoted or not.
		return l.RunVariant(env, strings.Join(args, " "))
	}
	s := l.Steps[r.step]
	if s.Action == nil {
		return fmt.Errorf("step %d (%s) has nothing to run; 'next' moves on", r.step+1, s.Title)
	}
	return s.Action.Do(env, l, s.Title)
}

// check takes the command line's flags. With no file or lesson it checks
// the open lesson's versions, or at the exercise step judges the learner's
// copy; "check FILE.cu" judges any file.
func (r *repl) check(env *lessons.Env, args []string) error {
	c, err := parseCheck(args, "", r.out)
	if err != nil {
		return err
	}
	if !c.all && c.lesson == "" {
		l, err := r.needLesson()
		if err != nil {
			return err
		}
		c.lesson = l.Slug
		at := l.Steps[r.step].Action
		if c.file == "" && at != nil && at.Kind() == "exercise" {
			if c.file, _, err = l.Exercise.Prepare(env, l); err != nil {
				return err
			}
		}
	}
	return runCheck(env, c, r.out)
}

func (r *repl) bench(env *lessons.Env, args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	sizes, err := lessons.ParseSizes(args)
	if err != nil {
		return err
	}
	if len(sizes) > 0 && !env.Live() {
		fmt.Fprintf(r.out, "No GPU here: replay shows the sizes recorded on the reference GPU; %s would be measured on a GPU.\n", strings.Join(args, ", "))
	}
	v := env.View
	v.Sizes = sizes
	return l.BenchAll(env.WithView(v))
}

func (r *repl) profile(env *lessons.Env, args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	p, err := parseProfile(args, true, r.out)
	if err != nil {
		return err
	}
	return runProfile(env, l, p, r.out)
}

func (r *repl) plot(env *lessons.Env, args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	return l.Plot(env)
}

// edit opens the learner's copy of the exercise in their editor and judges
// it; "edit kernel NAME" does the same with a copy of one of the lesson's
// kernels, which is then checked like the course's and timed beside it.
func (r *repl) edit(env *lessons.Env, args []string) error {
	l, err := r.needLesson()
	if err != nil {
		return err
	}
	if len(args) > 0 {
		if args[0] != "kernel" || len(args) != 2 {
			return errors.New("usage: edit [kernel <name>]")
		}
		return r.editKernel(env, l, args[1])
	}
	if l.Exercise == nil {
		return fmt.Errorf("%s has no exercise; 'edit kernel NAME' edits a copy of one of its kernels", l.Slug)
	}
	path, _, err := l.Exercise.Prepare(env, l)
	if err != nil {
		return err
	}
	if err := runEditor(path, "check "+path); err != nil {
		return err
	}
	return runCheck(env, checkArgs{lesson: l.Slug, file: path}, r.out)
}

// editKernel edits the learner's copy of kernel name, then tries it.
func (r *repl) editKernel(env *lessons.Env, l *lessons.Lesson, name string) error {
	path, created, err := l.KernelCopy(env, name)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(r.out, "Your copy of %s: %s\n", name, path)
	} else {
		fmt.Fprintf(r.out, "Your copy of %s (kept as you left it): %s\n", name, path)
	}
	if err := runEditor(path, "edit kernel "+name); err != nil {
		return err
	}
	code, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	err = env.TryEdit(l, lessons.Edit{Kernel: name, Code: string(code), File: filepath.Base(path)})
	if errors.Is(err, lessons.ErrUnchanged) {
		fmt.Fprintf(r.out, "%s is the course's %s as it was: change it, then 'edit kernel %s' again.\n", path, name, name)
		return nil
	}
	return err
}

// runEditor opens path in $VISUAL or $EDITOR; without either, it says how
// to go on (again, what to type once the file is edited).
func runEditor(path, again string) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		return fmt.Errorf("set $EDITOR (for example: export EDITOR=nano), or edit %s yourself and type '%s'", path, again)
	}
	parts := strings.Fields(editor)
	cmd := exec.Command(parts[0], append(parts[1:], path)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %s: %w", editor, err)
	}
	return nil
}

func (r *repl) fuse(env *lessons.Env, args []string) error {
	n := fusecmd.Elements
	if len(args) >= 2 && args[0] == "--n" {
		sizes, err := lessons.ParseSizes(args[1:2])
		if err != nil {
			return err
		}
		if len(sizes[0]) != 1 {
			return fmt.Errorf("fuse: --n takes one number of elements, like 2^20, not %s", args[1])
		}
		n, args = sizes[0][0], args[2:]
	}
	if len(args) == 0 {
		return errors.New("fuse: give an expression, like: fuse sigmoid(a + b*c)")
	}
	return fusecmd.Run(env, strings.Join(args, " "), n)
}

func (r *repl) device(env *lessons.Env) error {
	env.WriteDevice(r.out)
	return nil
}

func (r *repl) mem(env *lessons.Env, args []string) error { return env.WriteMem(r.out) }

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
		sort.Strings(out)
		return out
	}
	kernelNames := func(string) []string {
		if r.lesson == nil {
			return nil
		}
		out := r.lesson.KernelNames()
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
			items = append(items, readline.PcItem("show", readline.PcItem("kernel", readline.PcItemDynamic(kernelNames))))
		case "step":
			items = append(items, readline.PcItem("step", readline.PcItemDynamic(steps)))
		case "check":
			items = append(items, readline.PcItem("check", readline.PcItemDynamic(cuFiles)))
		case "edit":
			items = append(items, readline.PcItem("edit", readline.PcItem("kernel", readline.PcItemDynamic(kernelNames))))
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

// splitLine splits a REPL line into words at spaces, keeping what is
// inside double or single quotes together: run "conv alone".
func splitLine(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, c := range line {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("a quote (%c) is not closed", quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
