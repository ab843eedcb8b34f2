package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chzyer/readline"

	"cudarepl/gpu"
	"cudarepl/internal/syncbuf"
	"cudarepl/lessons"
	"cudarepl/nvrtc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// replayOnly skips where a GPU would change the output.
func replayOnly(t *testing.T) {
	t.Helper()
	w, err := gpu.Open()
	if err == nil {
		w.Close()
		t.Skip("a GPU is present; this test pins the replay-mode output")
	}
}

// workspace points the REPL's workspace (exercises, plots) at a temp dir.
func workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	t.Setenv("CUDAREPL_WORKSPACE", ws)
	t.Setenv("HOME", ws) // keeps the history file out of the real home
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, "config"))
	return ws
}

// transcript runs the REPL on input without a terminal and returns what it
// printed, with the workspace path replaced by $WORKSPACE.
func transcript(t *testing.T, input string) string {
	t.Helper()
	ws := workspace(t)
	var out bytes.Buffer
	status := runREPL(io.NopCloser(strings.NewReader(input)), &out, &out, false, nil)
	if status != 0 {
		t.Fatalf("runREPL = %d\n%s", status, out.String())
	}
	return strings.ReplaceAll(out.String(), ws, "$WORKSPACE")
}

// singleDashFlag is a flag as Go's flag package writes it, with one dash.
var singleDashFlag = regexp.MustCompile(`(?m)(^\s+|flag: )-[a-z]\w*`)

func TestREPLCommands(t *testing.T) {
	replayOnly(t)
	tests := []struct {
		desc  string
		input string
		want  []string // substrings of the output, in order
	}{
		{"help lists every command", "help\n", []string{"help", "lessons", "open", "next", "prev", "step", "show", "run", "check", "bench", "plot", "edit", "device", "mem", "quit"}},
		{"help of one command", "help bench\n", []string{"bench [sizes…]", "2^20", "Example: bench 2^20 2^24"}},
		{"help of a command lists its flags with two dashes", "help check\n", []string{"check [<file.cu>] [flags]", "--all", "--kernel FILE.cu", "--like VERSION", "--sanitize TOOL", "--variant NAME", "Example: check mine.cu"}},
		{"help of a command that does not exist", "help nope\n", []string{`error: no command "nope": 'help' lists them`}},
		{"a command's --help is its help", "bench --help\n", []string{"bench [sizes…]", "Example: bench 2^20 2^24"}},
		{"lessons", "lessons\n", []string{"1  hello-gpu", "2  vector-add", "5  matmul", "6  batched-gemm"}},
		{"open by number runs step 1", "open 2\n", []string{"Lesson 2 · Vector add", "── 1/11 Kernel", "vadd_v1"}},
		{"next and prev", "open 2\nnext\nprev\n", []string{"── 2/11 Launch", "1048583       256      4097", "── 1/11 Kernel"}},
		{"step n", "open vector\nstep 6\n", []string{"── 6/11 Block size", "replayed from NVIDIA H200"}},
		{"step out of range", "open 2\nstep 12\n", []string{"error: step \"12\": vector-add has steps 1 to 11"}},
		{"show", "open 2\nshow\n", []string{"1/11 Kernel\n\nThe CPU adds two vectors"}},
		{"show kernel", "open 2\nshow kernel vadd_v3\n", []string{"// v3: float4 loads"}},
		{"show unknown kernel", "open 2\nshow kernel nope\n", []string{`error: vector-add has no kernel "nope" (it has: vadd_v1, vadd_v2, vadd_v3, vadd_v3_restrict, vadd_unguarded)`}},
		{"run a variant in replay", "open 2\nrun vadd_v2\n", []string{"No GPU here", "vadd_v2  n=1048583", "ok"}},
		{"run an unknown variant", "open 2\nrun vadd_v9\n", []string{`error: vector-add has no variant "vadd_v9" (it has: vadd_v1, vadd_v2, vadd_v3, vadd_v3_restrict)`}},
		{"bench replays", "open 2\nbench\n", []string{"── Block size", "── Benchmark", "vadd_v3  n=67108864", "figure: $WORKSPACE/plots/02-vector-add-benchmark.png"}},
		{"bench with a bad size", "open 2\nbench 2^y\n", []string{`error: size "2^y": not a power like 2^20`}},
		{"plot", "open 1\nplot\n", []string{"── Copy bandwidth", "── GEMM throughput", "figure: $WORKSPACE/plots/01-hello-gpu-gemm-throughput.png"}},
		{"no lesson open", "next\n", []string{"error: no lesson is open"}},
		{"unknown command", "frobnicate\n", []string{`unknown command "frobnicate"; type 'help' for the list`}},
		{"device in replay names the GPUs the results come from", "device\n", []string{"gpu: no NVIDIA driver found",
			"replay mode: the lessons show results recorded on these GPUs", "NVIDIA H100 80GB HBM3  lessons 1, 3–5, 7–9", "NVIDIA H200", "lessons 1, 2, 5–7, 10, 11 and 16",
			"The NVIDIA H100 80GB HBM3, as recorded on", "compute capability      9.0 (sm_90)"}},
		{"mem", "mem\n", []string{"no GPU"}},
		// Each of these was a dead end in a walk-through.
		{"check takes the command line's flags", "open 2\ncheck --kernel ../../lessons/02-vector-add/testdata/foreign.cu --variant vector_add\n",
			[]string{"vector_add was not judged"}},
		{"check FILE picks the kernel by its parameters", "open 2\ncheck ../../lessons/02-vector-add/testdata/foreign.cu\n", []string{"vector_add was not judged"}},
		{"check with a kernel the file lacks", "open 2\ncheck --kernel ../../lessons/02-vector-add/testdata/foreign.cu --variant nope\n",
			[]string{`error: foreign.cu declares no kernel "nope" (it declares vector_add(const float*, const float*, float*, int))`}},
		{"check --sanitize without a GPU", "open 2\ncheck --sanitize memcheck\n", []string{"error: compute-sanitizer checks kernels as they run on a GPU, and there is none here"}},
		{"a variant with spaces, unquoted", "open 11\nrun conv alone\n", []string{"conv alone", "ok"}},
		{"a variant with spaces, quoted", "open 11\nrun \"conv alone\"\n", []string{"conv alone", "ok"}},
		{"an unclosed quote", "open 11\nrun \"conv alone\n", []string{"error: a quote (\") is not closed"}},
		{"show kernel lists the kernels", "open 5\nshow kernel\n", []string{"matmul's kernels (show one with 'show kernel NAME')", "matmul_v1", "matmul_tc_v3"}},
		{"show a kernel of another step's file", "open 5\nshow kernel matmul_tc_v3\n", []string{"// v3:", "matmul_tc_v3("}},
		{"show a helper a kernel calls", "open 5\nshow kernel tc_v3\n", []string{"// tc_v3 is matmul_tc_v3 for fp16 or bf16", "template <bool BF16>"}},
		{"show a helper of the course header", "open 5\nshow kernel mbar_wait\n", []string{"// mbar_wait spins until", "} while (!done);\n}"}},
		{"run a variant of another step's problem", "open 5\nrun matmul_tc_v3\n", []string{"these checks ran replayed", "matmul_tc_v3  16×8×16"}},
		{"bench sizes in replay", "open 2\nbench 1M\n", []string{"Replay shows the sizes recorded on the reference GPU; 1M would be measured on a GPU"}},
		{"a summary of many checks names 'run' in the open lesson", "open 14\ncheck\n", []string{"'run flash_v1' lists one version's checks"}},
		{"a summary of another lesson names check --variant", "open 2\ncheck 14\n", []string{"'check flash-attention --variant flash_v1' lists one version's checks"}},
		{"check one version", "check 2 --variant vadd_v2\n", []string{"vadd_v2  n=1048583", "ok"}},
		{"quit stops reading", "quit\nlessons\n", nil},
		// Each of these was a rough edge in a walk-through (issue 32).
		{"lessons refuses an extra argument", "lessons extra\n", []string{`error: lessons takes no arguments, and was given "extra": type 'lessons'`}},
		{"next refuses an extra argument", "open 2\nnext next\n", []string{`error: next takes no arguments, and was given "next": type 'next'`}},
		{"quit with an argument does not quit, and says so", "quit now\nlessons\n", []string{`error: quit takes no arguments, and was given "now": type 'quit'`, "2  vector-add"}},
		{"a command with too many arguments", "open 2\nshow kernel vadd_v1 vadd_v2\n", []string{"error: too many arguments: usage: show [kernel [<name>]]"}},
		{"a long unknown command is cut short", "frobnicate" + strings.Repeat("x", 5000) + "\n", []string{`unknown command "frobnicatexxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"; type 'help' for the list`}},
		{"a flag check lacks is one error, with two dashes", "open 2\ncheck --bogus\n", []string{"error: check has no flag --bogus: 'help check' lists its flags\n"}},
		{"a flag without its value", "open 2\ncheck --kernel\n", []string{"error: check --kernel needs FILE.cu after it: 'help check' lists its flags"}},
		{"a size of the wrong form says the lesson's form, before any notice", "open 8\nbench 2^20\n",
			[]string{"error: size 2^20 has 1 number, and launch-and-graphs measures sizes of 2 numbers, like 1x4096 or 1000x4096"}},
		{"a size too large says so", "open 5\nbench 2^99\n", []string{`error: size "2^99": too large: a size's numbers go up to 2^40`}},
		{"a variant list quotes names with commas", "open 8\nrun nonexistent\n",
			[]string{`error: launch-and-graphs has no variant "nonexistent" (it has: launches, "launches, each synchronised", graph, chain_fused)`}},
		{"an unknown kernel carries no package prefix", "open 8\nshow kernel nonexistent\n", []string{`error: launch-and-graphs has no kernel "nonexistent"`}},
		{"fuse's errors carry no package prefix", "fuse 1+2\n", []string{"error: fuse 1+2: the expression reads no input"}},
		{"an unknown lesson carries no package prefix", "check nope\n", []string{`error: no lesson "nope" (there are: hello-gpu,`}},
		{"a variant with spaces, escaped as Tab writes it", "open 11\ncheck --variant conv\\ alone\n", []string{"conv alone", "ok"}},
	}
	for _, tt := range tests {
		out := transcript(t, tt.input)
		rest := out
		for _, w := range tt.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: output lacks %q (in order)\n%s", tt.desc, w, out)
				break
			}
			rest = rest[i+len(w):]
		}
		if tt.desc == "quit stops reading" && strings.Contains(out, "hello-gpu") {
			t.Errorf("%s: commands after quit ran:\n%s", tt.desc, out)
		}
		// Package prefixes, and Go's own flag usage (single dashes).
		for _, bad := range []string{"error: lessons: ", "error: cudarepl: ", "error: fusecmd: ", "Usage of"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: output has %q, which a learner should not meet:\n%s", tt.desc, bad, out)
			}
		}
		if m := singleDashFlag.FindString(out); m != "" {
			t.Errorf("%s: output has a flag with one dash, %q: the README writes two:\n%s", tt.desc, m, out)
		}
		if n := strings.Count(out, "has no flag"); n > 1 {
			t.Errorf("%s: a bad flag is reported %d times, want once:\n%s", tt.desc, n, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if len(line) > 400 {
				t.Errorf("%s: a line of %d characters echoes what was typed:\n%.200s…", tt.desc, len(line), line)
			}
		}
	}
}

// TestLineWriter: readline gets whole lines, and the rest at Flush.
func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{w: writerFunc(func(p []byte) { got = append(got, string(p)) })}
	fmt.Fprint(w, "a\tb")
	fmt.Fprint(w, "\tc\nd")
	fmt.Fprint(w, "e")
	w.Flush()
	if want := []string{"a\tb\tc\n", "de"}; !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
}

// writerFunc is an io.Writer that hands each write to f.
type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// TestAligned: the columns of 'help' and 'lessons' line up, however long
// a lesson's name or a command's arguments.
func TestAligned(t *testing.T) {
	out := transcript(t, "help\nlessons\n")
	col := map[string][]int{} // the column each table's second field starts at, per row
	for _, line := range strings.Split(out, "\n") {
		for _, c := range commands {
			if strings.HasPrefix(line, "  "+c.name+" ") {
				col["help"] = append(col["help"], len([]rune(line))-len([]rune(c.short)))
			}
		}
		for _, l := range lessons.All() {
			if strings.HasPrefix(strings.TrimLeft(line, " "), strconv.Itoa(l.Number)+"  "+l.Slug+" ") {
				col["lessons"] = append(col["lessons"], strings.Index(line, l.Title))
			}
		}
	}
	for name, cs := range col {
		if len(cs) < 10 || slices.Min(cs) != slices.Max(cs) {
			t.Errorf("%s's columns start at %v, want one column:\n%s", name, cs, out)
		}
	}
}

// TestREPLHome: a path that starts with ~ is the home folder's, as a shell
// would have it.
func TestREPLHome(t *testing.T) {
	replayOnly(t)
	home := workspace(t)
	foreign, err := os.ReadFile("../../lessons/02-vector-add/testdata/foreign.cu")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "foreign.cu"), foreign, 0o644)
	var out bytes.Buffer
	runREPL(io.NopCloser(strings.NewReader("open 2\ncheck ~/foreign.cu\ncheck --kernel ~/foreign.cu\n")), &out, &out, false, nil)
	if n := strings.Count(out.String(), "vector_add was not judged"); n != 2 {
		t.Errorf("check ~/foreign.cu judged it %d times, want 2:\n%s", n, out.String())
	}
}

// TestREPLTranscriptGolden pins one whole session's output.
func TestREPLTranscriptGolden(t *testing.T) {
	replayOnly(t)
	if v, err := nvrtc.Version(); err != nil || v != "11.8" {
		t.Skipf("needs NVRTC 11.8 (Debian's libnvrtc11.2), with which the golden transcript was recorded; here: %q, %v", v, err)
	}
	out := transcript(t, "lessons\nopen 2\nnext\nnext\nnext\nrun vadd_v1\nbench\nquit\n")
	path := filepath.Join("testdata", "transcript.golden")
	if *update {
		os.WriteFile(path, []byte(out), 0o644)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if out != string(want) {
		got, exp := strings.Split(out, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(got) || i < len(exp); i++ {
			var g, e string
			if i < len(got) {
				g = got[i]
			}
			if i < len(exp) {
				e = exp[i]
			}
			if g != e {
				t.Errorf("transcript differs from %s at line %d (go test -update if meant):\n got %q\nwant %q", path, i+1, g, e)
				break
			}
		}
	}
}

func TestREPLExercise(t *testing.T) {
	replayOnly(t)
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	bad, _ := filepath.Abs("../../lessons/02-vector-add/testdata/syntax_error.cu")
	good, _ := filepath.Abs("../../lessons/02-vector-add/testdata/solution.cu")
	t.Setenv("EDITOR", "true") // an editor that changes nothing
	out := transcript(t, "open 2\nstep 11\ncheck "+bad+"\ncheck "+good+"\ncheck\nedit\n")
	for _, want := range []string{
		"Your copy of the exercise: $WORKSPACE/vector-add/vadd_exercise.cu",
		"gpu: nvrtc: syntax_error.cu:3: expected a \";\"",
		"FAILED: vadd_exercise does not compile",
		"solution.cu compiled: ",
		"judging a kernel needs a GPU",
		"vadd_exercise.cu compiled: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
}

// TestREPLCtrlCStopsACommand sends a real SIGINT while a command runs: the
// command stops, the REPL goes on.
func TestREPLCtrlCStopsACommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows a program cannot send Ctrl-C to itself alone: the console's Ctrl-C reaches every program attached to it")
	}
	workspace(t)
	started := make(chan struct{})
	commands = append(commands, command{name: "wait", run: func(r *repl, env *lessons.Env, _ []string) error {
		close(started)
		select {
		case <-env.Ctx.Done():
			return lessons.ErrStopped
		case <-time.After(10 * time.Second):
			return errors.New("not stopped")
		}
	}})
	defer func() { commands = commands[:len(commands)-1] }()
	go func() {
		<-started
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Signal(os.Interrupt)
		}
	}()
	var out bytes.Buffer
	runREPL(io.NopCloser(strings.NewReader("wait\nlessons\n")), &out, &out, false, nil)
	if !strings.Contains(out.String(), "stopped\n") || !strings.Contains(out.String(), "vector-add") {
		t.Errorf("Ctrl-C did not stop just the command:\n%s", out.String())
	}
}

func TestCompleter(t *testing.T) {
	workspace(t)
	s, err := openSession(io.Discard, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	r := &repl{s: s, out: io.Discard}
	c := completer{r}
	var slugs []string // every lesson, in course order
	for _, l := range lessons.All() {
		slugs = append(slugs, l.Slug+" ")
	}
	tests := []struct {
		line string
		want []string
	}{
		{"ope", []string{"n "}},
		{"open vec", []string{"tor-add "}},
		{"open ", slugs},
		{"show k", []string{"ernel "}},
		{"help be", []string{"nch "}},
		{"ru", []string{"n "}},
	}
	for _, tt := range tests {
		got, _ := c.Do([]rune(tt.line), len([]rune(tt.line)))
		var cands []string
		for _, g := range got {
			cands = append(cands, string(g))
		}
		if strings.Join(cands, "|") != strings.Join(tt.want, "|") {
			t.Errorf("complete %q = %q, want %q", tt.line, cands, tt.want)
		}
	}
	r.lesson, _ = lessons.Find("vector-add")
	got, _ := c.Do([]rune("run vadd_v"), 10)
	var cands []string
	for _, g := range got {
		cands = append(cands, string(g))
	}
	if strings.Join(cands, "|") != "1 |2 |3 |3_restrict " {
		t.Errorf("complete \"run vadd_v\" with vector-add open = %q", cands)
	}
	if got, _ := c.Do([]rune("show kernel vadd_v3"), 19); len(got) != 2 || string(got[0]) != " " || string(got[1]) != "_restrict " {
		t.Errorf("complete \"show kernel vadd_v3\" with vector-add open = %q", got)
	}
	// With lesson 14 open: names with spaces, flags and their values, files.
	r.lesson, _ = lessons.Find("flash-attention")
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"run cuDNN S", []string{"DPA "}},
		{"run chain", []string{" (lesson 13) "}},
		{`run "cuDNN`, []string{` SDPA" `}},
		{"check --", []string{"all ", "kernel ", "like ", "sanitize ", "variant "}},
		{"check --sanitize r", []string{"acecheck "}},
		{"check --variant cuDNN", []string{`\ SDPA `}},
		{"check --variant chain", []string{`\ (lesson\ 13) `}},
		{`check --variant "chain`, []string{` (lesson 13)" `}},
		{"check 13 --variant chain,", []string{`\ scale\ in\ α `}},
		{"check ../../lessons/02-vector-add/testdata/fo", []string{"reign.cu "}},
		{"check --kernel ../../lessons/02-vector-add/test", []string{"data/"}},
		{"profile --st", []string{"ep "}},
		{"fuse --", []string{"n "}},
		{"step 1", []string{" ", "0 ", "1 "}},
	} {
		got, _ := c.Do([]rune(tt.line), len([]rune(tt.line)))
		var cands []string
		for _, g := range got {
			cands = append(cands, string(g))
		}
		if strings.Join(cands, "|") != strings.Join(tt.want, "|") {
			t.Errorf("complete %q with flash-attention open = %q, want %q", tt.line, cands, tt.want)
		}
		// What Tab writes, splitLine reads back as the whole name.
		if len(tt.want) == 1 && strings.HasPrefix(tt.line, "check --variant") {
			words, err := splitLine(tt.line + tt.want[0])
			if err != nil || !slices.Contains([]string{"cuDNN SDPA", "chain (lesson 13)"}, words[len(words)-1]) {
				t.Errorf("splitLine(%q) = %q, %v: Tab's completion does not read back", tt.line+tt.want[0], words, err)
			}
		}
	}
}

// fakeTerminal runs the REPL through readline on a pipe that claims to be a
// terminal, typing keys and waiting for the output each time.
func fakeTerminal(t *testing.T, history string, keys ...string) string {
	t.Helper()
	pr, pw := io.Pipe()
	out := &syncbuf.Buffer{}
	cfg := &readline.Config{
		Stdin: pr, Stdout: out, Stderr: out, HistoryFile: history,
		FuncIsTerminal: func() bool { return true },
		FuncMakeRaw:    func() error { return nil },
		FuncExitRaw:    func() error { return nil },
		FuncGetWidth:   func() int { return 100 },
	}
	done := make(chan int)
	go func() { done <- runREPL(pr, out, out, true, cfg) }()
	for _, k := range keys {
		time.Sleep(150 * time.Millisecond) // let readline draw its prompt
		if _, err := pw.Write([]byte(k)); err != nil {
			t.Fatalf("typing %q: %v", k, err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the REPL did not quit; output:\n%s", out.String())
	}
	pw.Close()
	return out.String()
}

func TestFakeTerminal(t *testing.T) {
	ws := workspace(t)
	history := filepath.Join(ws, "history")
	out := fakeTerminal(t, history,
		"lessons\r",
		"ope\t2\r",                    // Tab completes "open "
		"\x03",                        // Ctrl-C at the prompt: a hint, not an exit
		"frobnicate\r",                // a bad command
		strings.Repeat("y", 600)+"\r", // too long to keep in history
		"\x04",                        // Ctrl-D quits
	)
	for _, want := range []string{"cudarepl> ", "2  vector-add", "Lesson 2 · Vector add", "vector-add 1/11> ", "(Ctrl-D or 'quit' leaves)", `unknown command "frobnicate"`} {
		if !strings.Contains(out, want) {
			t.Errorf("fake terminal output lacks %q:\n%s", want, out)
		}
	}
	h, _ := os.ReadFile(history)
	if !strings.Contains(string(h), "open 2") {
		t.Errorf("history file holds %q, want it to have \"open 2\"", h)
	}
	if strings.Contains(string(h), "yyyy") {
		t.Errorf("history file keeps a line of 600 characters:\n%.200s", h)
	}
	// A second session recalls the first one's last command with ↑.
	out = fakeTerminal(t, history, "\x1b[A\r", "\x04")
	if !strings.Contains(out, "unknown command \"frobnicate\"") {
		t.Errorf("↑ in a new session did not recall the last command:\n%s", out)
	}
}

// TestREPLEditKernel: "edit kernel NAME" makes the learner's copy of a
// course kernel, opens it, and tries it: unchanged it says so; changed, it
// is checked like the course's (here, without a GPU, compiled only). The
// copy is kept as the learner left it.
func TestREPLEditKernel(t *testing.T) {
	replayOnly(t)
	t.Setenv("EDITOR", "true") // an editor that changes nothing
	out := transcript(t, "open 2\nedit kernel vadd_v2\nedit kernel vadd_v2\n")
	for _, want := range []string{
		"Your copy of vadd_v2: $WORKSPACE/vector-add/vadd_v2.cu",
		"is the course's vadd_v2 as it was: change it, then 'edit kernel vadd_v2' again.",
		"Your copy of vadd_v2 (kept as you left it): $WORKSPACE/vector-add/vadd_v2.cu",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	// An editor that swaps the operands: still correct, no longer the course's.
	swap := filepath.Join(t.TempDir(), "swap.sh")
	os.WriteFile(swap, []byte("#!/bin/sh\nsed -i 's/a\\[i\\] + b\\[i\\]/b[i] + a[i]/' \"$1\"\n"), 0o755)
	t.Setenv("EDITOR", swap)
	out = transcript(t, "open 2\nedit kernel vadd_v1\n")
	if !strings.Contains(out, "vadd_v1 was not judged") {
		t.Errorf("an edited kernel without a GPU:\n%s", out)
	}
	if out := transcript(t, "open 2\nedit kernel nope\n"); !strings.Contains(out, `error: vector-add has no kernel "nope"`) {
		t.Errorf("editing a kernel the lesson lacks:\n%s", out)
	}
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("an edit that does not compile needs NVRTC to fail: %v", err)
	}
	// An editor that drops a semicolon: the verdict says it fails, once.
	broken := filepath.Join(t.TempDir(), "broken.sh")
	os.WriteFile(broken, []byte("#!/bin/sh\nsed -i 's/a\\[i\\] + b\\[i\\];/a[i] + b[i]/' \"$1\"\n"), 0o755)
	t.Setenv("EDITOR", broken)
	out = transcript(t, "open 2\nedit kernel vadd_v1\n")
	if n := strings.Count(out, "vadd_v1 does not compile"); n != 1 || strings.Contains(out, "error: FAILED") {
		t.Errorf("an edit that does not compile says so %d times, want once, as the verdict:\n%s", n, out)
	}
}
