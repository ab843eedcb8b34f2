package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/chzyer/readline"

	"cudarepl/internal/term"
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
	flush  func()             // writes what out holds of a line not yet ended; nil when out holds nothing back
}

// lineWriter hands w whole lines only, holding back the end of a line
// until its newline comes, or Flush.
type lineWriter struct {
	w   io.Writer
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		_, err := l.w.Write(l.buf[:i+1])
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
		if err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes what is held back of a line not yet ended.
func (l *lineWriter) Flush() {
	if len(l.buf) > 0 {
		l.w.Write(l.buf)
		l.buf = l.buf[:0]
	}
}

// command is one thing the REPL understands.
type command struct {
	name, args, short, long string
	run                     func(r *repl, env *lessons.Env, args []string) error
	// maxArgs is the most arguments it takes; -1 for any number. More
	// are refused, never ignored.
	maxArgs int
	// flags, if set, is the flag set it parses, which 'help NAME' lists.
	flags func() *flag.FlagSet
	// example is a line that runs as written (with a lesson open).
	example string
}

// commands, in the order help lists them.
var commands []command

func init() {
	commands = []command{
		{name: "help", args: "[command]", short: "list the commands, or explain one", maxArgs: 1, example: "help check",
			run: func(r *repl, _ *lessons.Env, args []string) error { return r.help(args) }},
		{name: "lessons", short: "list the lessons", example: "lessons",
			run: func(r *repl, _ *lessons.Env, _ []string) error { writeLessonList(r.out); return nil }},
		{name: "open", args: "<lesson>", short: "open a lesson at its first step", maxArgs: 1, example: "open vector-add",
			long: "A lesson is named by its slug, its number, or the start of its slug: 'open 2', 'open vector'.",
			run:  (*repl).open},
		{name: "next", short: "go to the next step and run it", example: "next",
			run: func(r *repl, env *lessons.Env, _ []string) error { return r.goTo(env, r.step+1) }},
		{name: "prev", short: "go to the previous step and run it", example: "prev",
			run: func(r *repl, env *lessons.Env, _ []string) error { return r.goTo(env, r.step-1) }},
		{name: "step", args: "<n>", short: "go to step n and run it", maxArgs: 1, example: "step 6", run: (*repl).stepCmd},
		{name: "show", args: "[kernel [<name>]]", short: "show the step's prose again, or a kernel's source", maxArgs: 2, example: "show kernel vadd_v2",
			long: "'show kernel' lists the lesson's kernels; 'show kernel NAME' shows one with its registers and shared memory, or a __device__ helper the kernels call.",
			run:  (*repl).show},
		{name: "run", args: "[<variant>]", short: "run the step again, or check one variant", maxArgs: -1, example: "run vadd_v2",
			long: "With a variant (any the lesson's steps run; quote a name with spaces or not), runs it once at every check size and checks every element against the CPU reference.",
			run:  (*repl).runCmd},
		{name: "check", args: "[<file.cu>] [flags]", short: "check the lesson's versions, your exercise, or a file", maxArgs: -1, example: "check mine.cu",
			long:  "'check' checks every version of the lesson; at the exercise step it judges your copy instead. 'check FILE.cu' judges any file's kernel exactly as the lesson's versions are judged (in lesson 3, 'check FILE.sched' judges a schedule). The flags are the command line's.",
			flags: func() *flag.FlagSet { return checkFlags(&checkArgs{}) }, run: (*repl).check},
		{name: "bench", args: "[sizes…]", short: "run the lesson's sweeps (live) or show them (replay)", maxArgs: -1, example: "bench 2^20 2^24",
			long: "Sizes may be written 1048576, 2^20, 1M, or 1000x1003x517; with sizes, only the sweeps over sizes run. In replay the recorded sizes are shown. Ctrl-C stops a sweep and keeps what was measured.",
			run:  (*repl).bench},
		{name: "profile", args: "[variant…] [flags]", short: "show why each version is as fast as it is: hardware counters", maxArgs: -1, example: "profile --step 6",
			long:  "Runs each version of the lesson's sweeps (its ladders, and the widest sweep of each other problem) once under Nsight Compute (ncu) and shows two tables per sweep: memory (time, DRAM bytes beside the bytes the lesson predicts, sectors per load, L1 and L2 hit rates, bank conflicts) and compute (SM busy, instructions, occupancy and what limits it, tensor pipe, the top warp stalls). Without a GPU the profiles recorded with the lesson show; without ncu one line says what to install. The flags are the command line's; --kernel profiles your kernel beside the version it is like.",
			flags: func() *flag.FlagSet { return profileFlags(&profileArgs{}) }, run: (*repl).profile},
		{name: "plot", short: "draw the lesson's figures (PNG, SVG and here)", example: "plot",
			long: "Figures are drawn from this session's measurements where there are any, otherwise from the recorded ones, and say which.",
			run:  (*repl).plot},
		{name: "edit", args: "[kernel <name>]", short: "edit your copy of the exercise, or of a kernel, then check it", maxArgs: 2, example: "edit kernel vadd_v2",
			long: "Opens $VISUAL or $EDITOR on your copy of the exercise (created from the lesson's starter if you have none), then compiles and judges it. 'edit kernel NAME' does the same with your copy of one of the lesson's kernels, then checks it like the course's and times it beside it. Copies live in the workspace and are never overwritten.",
			run:  (*repl).edit},
		{name: "fuse", args: "[--n SIZE] <expression>", short: "fuse an elementwise expression into one kernel, check and time it", maxArgs: -1, example: "fuse sigmoid(a + b*c)",
			long: "Writes the expression over named fp32 inputs (+ - * /, numbers, and abs cos exp log max min pow relu sigmoid sin sqrt tanh) as one kernel and as one kernel an operation, compiles both with NVRTC, and on a GPU checks both against the expression in float64 and times them beside the device-to-device copy, at 2^26 elements unless --n says otherwise.",
			run:  (*repl).fuse},
		{name: "device", short: "describe the GPU", example: "device",
			run: func(r *repl, env *lessons.Env, _ []string) error { return r.device(env) }},
		{name: "mem", short: "show free and total GPU memory", example: "mem", run: (*repl).mem},
		{name: "quit", short: "leave (Ctrl-D also does)", example: "quit"},
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
	cfg.AutoComplete = completer{r}
	cfg.InterruptPrompt = "^C"
	cfg.EOFPrompt = "quit"
	if cfg.HistoryFile == "" {
		cfg.HistoryFile = historyFile()
	}
	cfg.DisableAutoSaveHistory = true // loop saves a line, unless it is too long to be worth recalling
	rl, err := readline.NewEx(cfg)
	if err != nil {
		fmt.Fprintf(errOut, "cudarepl: %v\n", err)
		return 1
	}
	defer rl.Close()
	r.rl = rl
	// readline redraws its prompt after every write that leaves a line
	// open; a table written a cell at a time (text/tabwriter) would come
	// out interleaved with prompts. Whole lines it draws cleanly.
	lines := &lineWriter{w: rl.Stdout()}
	md := term.NewMarkdown(lines, term.Width(os.Stdout)) // prose rendered for the terminal
	r.s.env.Out, r.out, r.flush = md, md, lines.Flush
	r.s.env.Progress = term.Progress(rl.Stderr())
	r.loop(func() (string, error) {
		rl.SetPrompt(r.prompt())
		line, err := rl.Readline()
		if err == nil && keepInHistory(line) {
			rl.SaveHistory(line)
		}
		return line, err
	})
	return 0
}

// maxHistoryLine is the longest line kept in history: a pasted file or a
// stuck key is not a command to recall.
const maxHistoryLine = 512

// keepInHistory says whether line is worth recalling with ↑.
func keepInHistory(line string) bool {
	return strings.TrimSpace(line) != "" && len(line) <= maxHistoryLine
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
			if len(fields) == 1 {
				return
			}
			fmt.Fprintf(r.out, "error: %s\n", extraArgs(fields[0], fields[1:], "").Error())
			continue
		}
		r.exec(fields)
	}
}

// exec runs one command. Ctrl-C while it runs cancels it, not the REPL.
func (r *repl) exec(fields []string) {
	c, ok := findCommand(fields[0])
	if !ok {
		fmt.Fprintf(r.out, "unknown command %s; type 'help' for the list\n", quoteArgs(fields[:1]))
		return
	}
	if c.name != "help" && wantsHelp(fields[1:]) { // "check --help", as on the command line
		r.help(fields[:1])
		return
	}
	if c.maxArgs >= 0 && len(fields)-1 > c.maxArgs {
		if c.maxArgs == 0 {
			fmt.Fprintf(r.out, "error: %s\n", extraArgs(c.name, fields[1:], "").Error())
		} else {
			fmt.Fprintf(r.out, "error: too many arguments: usage: %s %s\n", c.name, c.args)
		}
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
	r.s.env.Reconnect() // a remote GPU whose connection was lost: this command tries again
	v := r.s.env.View
	v.Ctx = ctx // this command's Ctrl-C, carried by a copy of the session's env
	v.OneVersion = r.oneVersion
	if r.flush != nil {
		defer r.flush() // after the error line, if any: the command's output is all out before the prompt
	}
	err := c.run(r, r.s.env.WithView(v), fields[1:])
	close(done)
	signal.Stop(sig)
	cancel()
	switch {
	case errors.Is(err, lessons.ErrStopped):
		fmt.Fprintln(r.out, "stopped")
	case errors.As(err, new(*lessons.VerdictError)), errors.As(err, new(notJudged)):
		// The verdict's line has said it.
	case err != nil:
		fmt.Fprintf(r.out, "error: %s\n", lessons.Message(err))
	}
}

// help lists the commands in columns as wide as their longest entries,
// or explains one: what it does, its flags, an example.
func (r *repl) help(args []string) error {
	if len(args) > 0 {
		c, ok := findCommand(args[0])
		if !ok {
			return fmt.Errorf("no command %s: 'help' lists them", quoteArgs(args[:1]))
		}
		fmt.Fprintf(r.out, "%s\n", strings.TrimSpace(c.name+" "+c.args))
		for _, l := range wrap(c.short+".", 76) {
			fmt.Fprintf(r.out, "  %s\n", l)
		}
		if c.long != "" {
			for _, l := range wrap(c.long, 76) {
				fmt.Fprintf(r.out, "  %s\n", l)
			}
		}
		if c.flags != nil {
			fmt.Fprintln(r.out, "Flags:")
			writeFlags(r.out, c.flags())
		}
		if c.example != "" {
			fmt.Fprintf(r.out, "Example: %s\n", c.example)
		}
		return nil
	}
	tw := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.name, c.args, c.short)
	}
	tw.Flush()
	fmt.Fprintln(r.out, "'help NAME' explains one, with its flags and an example; Tab completes commands, lessons, variants and flags.")
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
		return errors.New("usage: open <lesson>: 'lessons' lists them")
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
		fmt.Fprintf(r.out, "%d/%d %s\n\n", r.step+1, len(l.Steps), s.Title)
		env.Prose(s.Prose)
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
	c, err := parseCheck(args, "")
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
	if len(sizes) > 0 {
		if err := l.CheckSizes(sizes); err != nil {
			return err
		}
		if !env.Live() {
			env.ReplayNotice()
			fmt.Fprintln(r.out, replaySizesNote(args))
		}
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
	p, err := parseProfile(args, true)
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
			return errors.New("usage: edit [kernel <name>]: 'show kernel' lists the names")
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

// splitLine splits a REPL line into words at spaces, keeping what is
// inside double or single quotes together, as a shell does: run "conv
// alone"; a backslash outside single quotes keeps the next character as
// it is (check 14 --variant cuDNN\ SDPA, as Tab completes it).
func splitLine(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, c := range line {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped, inWord = false, true
		case c == '\\' && quote != '\'':
			escaped, inWord = true, true
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
