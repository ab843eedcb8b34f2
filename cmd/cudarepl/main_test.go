package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/nvrtc"
)

func TestRun(t *testing.T) {
	tests := []struct {
		desc       string
		args       []string
		wantStatus int
		wantOut    string // substring of stdout
		wantErr    string // substring of stderr
	}{
		{"help flag", []string{"--help"}, 0, "Usage:", ""},
		{"help", []string{"help"}, 0, "cudarepl device", ""},
		{"help of one command: its forms, flags and examples", []string{"help", "check"}, 0,
			"Usage:\n  cudarepl check --all\n", ""},
		{"a command's --help is its help", []string{"bench", "--help"}, 0, "  --step N ", ""},
		{"help of a command that does not exist", []string{"help", "nope"}, 2, "", `cudarepl: no command "nope": 'cudarepl help' lists them`},
		{"help of a command of the REPL", []string{"help", "fuse"}, 2, "", "fuse is a command of the REPL: start cudarepl, then type 'help fuse'"},
		{"version names the driver, NVRTC and cuBLAS", []string{"version"}, 0, "cudarepl 0.1.0-dev", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		status := run(tt.args, &out, &errb)
		if status != tt.wantStatus || !strings.Contains(out.String(), tt.wantOut) || !strings.Contains(errb.String(), tt.wantErr) {
			t.Errorf("%s: run(%q) = %d\nstdout %q\nstderr %q\nwant %d, %q, %q", tt.desc, tt.args, status, out.String(), errb.String(), tt.wantStatus, tt.wantOut, tt.wantErr)
		}
	}
}

// TestDevice runs the real command: a table on a GPU machine, the no-GPU
// sentence elsewhere; both exit 0.
func TestDevice(t *testing.T) {
	var out, errb bytes.Buffer
	status := run([]string{"device"}, &out, &errb)
	if status != 0 {
		t.Fatalf("device = %d, stderr %q", status, errb.String())
	}
	s := out.String()
	if !strings.Contains(s, "replay mode") && !strings.Contains(s, "compute capability") {
		t.Errorf("device printed neither a table nor the replay sentence:\n%s", s)
	}
}

func TestCommandLines(t *testing.T) {
	replayOnly(t)
	home := workspace(t)
	foreign, err := os.ReadFile("../../lessons/02-vector-add/testdata/foreign.cu")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "foreign.cu"), foreign, 0o644)
	tests := []struct {
		desc       string
		args       []string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{"lessons", []string{"lessons"}, 0, "2  vector-add", ""},
		{"run needs a lesson", []string{"run"}, 2, "", "usage: cudarepl run <lesson>"},
		{"run an unknown lesson", []string{"run", "nope"}, 2, "", `cudarepl: no lesson "nope" (there are: hello-gpu, vector-add, `},
		{"run a lesson in replay", []string{"run", "2"}, 0, "── 11/11 Exercise", ""},
		{"check --all in replay", []string{"check", "--all"}, 0, "replay mode: the checks above are the recorded ones", ""},
		{"check with both --all and a lesson", []string{"check", "--all", "2"}, 2, "", "usage: cudarepl check --all"},
		{"check with both --all and a version", []string{"check", "--all", "--variant", "vadd_v2"}, 2, "", "usage: cudarepl check --all"},
		{"check one version", []string{"check", "2", "--variant", "vadd_v2"}, 0, "vadd_v2  n=1048583", ""},
		{"a summary of many checks names a command that works here", []string{"check", "14"}, 0, "'cudarepl check flash-attention --variant flash_v1' lists one version's checks", ""},
		{"check a missing file", []string{"check", "2", "--kernel", "/nonexistent.cu"}, 2, "", "no such file"},
		{"bench --json without a GPU", []string{"bench", "2", "--json", "/tmp/x.json"}, 1, "", "--json: no GPU here"},
		{"bench --step out of range", []string{"bench", "2", "--step", "99"}, 2, "", "--step 99: vector-add has steps 1 to 11"},
		{"bench --step of a step that measures nothing", []string{"bench", "2", "--step", "1"}, 2, "", "--step 1: \"Kernel\" measures nothing"},
		{"bench a bad size", []string{"bench", "2", "1e9"}, 2, "", `size "1e9"`},
		{"bench --rounds below 0", []string{"bench", "2", "--rounds", "-1"}, 2, "", "--rounds -1: a sweep is measured in 1 round or more"},
		{"bench an unknown flag", []string{"bench", "2", "--fast"}, 2, "", "cudarepl: bench has no flag --fast: 'cudarepl help bench' lists its flags\n"},
		{"a flag check lacks: one line, two dashes, no usage dump", []string{"check", "--bogus"}, 2, "", "cudarepl: check has no flag --bogus: 'cudarepl help check' lists its flags\n"},
		{"a flag without its value", []string{"bench", "2", "--step"}, 2, "", "cudarepl: bench --step needs N after it: 'cudarepl help bench' lists its flags\n"},
		{"a flag's value that is not a number", []string{"bench", "2", "--step", "x"}, 2, "", "cudarepl: bench --step x: not a whole number\n"},
		{"a value given to a flag that takes none", []string{"check", "--all=maybe"}, 2, "", "cudarepl: check --all=maybe: --all takes no value\n"},
		{"lessons with an extra argument", []string{"lessons", "extra"}, 2, "", `cudarepl: lessons takes no arguments, and was given "extra": type 'cudarepl lessons'`},
		{"device with an extra argument", []string{"device", "x"}, 2, "", `cudarepl: device takes no arguments, and was given "x"`},
		{"version with an extra argument", []string{"version", "x"}, 2, "", `cudarepl: version takes no arguments, and was given "x"`},
		{"a size of the wrong form says the lesson's form", []string{"bench", "8", "2^20"}, 2, "",
			"cudarepl: size 2^20 has 1 number, and launch-and-graphs measures sizes of 2 numbers, like 1x4096 or 1000x4096\n"},
		{"a size too large says so", []string{"bench", "matmul", "2^99"}, 2, "", `cudarepl: size "2^99": too large: a size's numbers go up to 2^40`},
		{"sizes in replay are said to be not what is shown", []string{"bench", "vector-add", "1M"}, 0,
			"Replay shows the sizes recorded on the reference GPU; 1M would be measured on a GPU.", ""},
		{"a kernel file under ~ is found", []string{"check", "2", "--kernel=~/foreign.cu"}, exitNotJudged, "vector_add was not judged", ""},
		{"profile needs a lesson", []string{"profile"}, 2, "", "usage: cudarepl profile <lesson>"},
		{"profile --variant needs --kernel", []string{"profile", "2", "--variant", "x"}, 2, "", "usage: cudarepl profile"},
		{"profile --json without a GPU", []string{"profile", "2", "--json", "/tmp/x.json"}, 1, "", "--json: no GPU here"},
		{"profile an unknown variant", []string{"profile", "2", "vadd_v9"}, 2, "", "vector-add has no variant vadd_v9 to profile"},
		{"profile --step of prose", []string{"profile", "2", "--step", "1"}, 2, "", "step 1 of vector-add is not a sweep"},
		{"check an unknown version", []string{"check", "2", "--variant", "vadd_v9"}, 2, "", `vector-add has no variant "vadd_v9"`},
		{"--like a version of other parameters", []string{"check", "14", "--kernel", "../../lessons/14-flash-attention/testdata/solution.cu", "--like", "flash_v3"}, 2, "", "flash_exercise takes (const float*"},
		{"one version's many checks are listed, not summed up", []string{"check", "14", "--variant", "flash_v2"}, 0, "flash_v2  B=1 H=4 S=1000 d=128, causal", ""},
		{"profile a file without a GPU", []string{"profile", "2", "--kernel", "../../lessons/02-vector-add/testdata/solution.cu"}, 1, "", "profiling solution.cu needs a GPU and Nsight Compute"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		status := run(tt.args, &out, &errb)
		if status != tt.wantStatus || !strings.Contains(out.String(), tt.wantOut) || !strings.Contains(errb.String(), tt.wantErr) {
			t.Errorf("%s: run(%q) = %d\nstdout %.300q\nstderr %q\nwant %d, %q, %q", tt.desc, tt.args, status, out.String(), errb.String(), tt.wantStatus, tt.wantOut, tt.wantErr)
		}
	}
}

// TestCommandLineVerdict: a kernel that fails its checks exits 1; the
// verdict is on stdout, and stderr only says that it does not pass.
func TestCommandLineVerdict(t *testing.T) {
	replayOnly(t)
	workspace(t)
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("a kernel that does not compile needs NVRTC to fail: %v", err)
	}
	var out, errb bytes.Buffer
	status := run([]string{"check", "2", "--kernel", "../../lessons/02-vector-add/testdata/syntax_error.cu"}, &out, &errb)
	if status != 1 || !strings.Contains(out.String(), "FAILED: vadd_exercise does not compile") || errb.String() != "cudarepl: vadd_exercise does not pass\n" {
		t.Errorf("check of a kernel that does not compile = %d\nstdout %q\nstderr %q", status, out.String(), errb.String())
	}
}

// TestCommandLineNotJudged: a kernel that could not be run (no GPU here,
// or no NVRTC) is neither a pass nor a failure: exit status 3, and the
// last line says so.
func TestCommandLineNotJudged(t *testing.T) {
	replayOnly(t)
	workspace(t)
	var out, errb bytes.Buffer
	status := run([]string{"check", "2", "--kernel", "../../lessons/02-vector-add/testdata/solution.cu"}, &out, &errb)
	want := "cudarepl: vadd_exercise was not judged, neither passed nor failed (exit status 3)\n"
	if status != exitNotJudged || !strings.Contains(out.String(), "vadd_exercise was not judged") || errb.String() != want {
		t.Errorf("check of a kernel with no GPU = %d\nstdout %q\nstderr %q\nwant %d and stderr %q", status, out.String(), errb.String(), exitNotJudged, want)
	}
}

// TestCheckAllStops: Ctrl-C (a cancelled context) stops check --all at
// once, keeping what it printed, rather than going on through the lessons.
func TestCheckAllStops(t *testing.T) {
	replayOnly(t)
	workspace(t)
	var out bytes.Buffer
	s, err := openSession(&out, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := s.env.View
	v.Ctx = ctx
	err = runCheck(s.env.WithView(v), checkArgs{all: true}, &out)
	if !errors.Is(err, lessons.ErrStopped) || strings.Count(out.String(), "── ") > 1 || strings.Contains(out.String(), "FAILED") {
		t.Errorf("check --all after Ctrl-C = %v, want it stopped in the first lesson:\n%s", err, out.String())
	}
}

// TestVersion: version says what it found of the driver, NVRTC and each
// library, one line each, or why not.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if status := run([]string{"version"}, &out, &errb); status != 0 {
		t.Fatalf("version = %d, stderr %q", status, errb.String())
	}
	for _, want := range []string{"\ndriver ", "\nNVRTC ", "\ncuBLAS ", "\ncuDNN "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version lacks a line starting %q:\n%s", want[1:], out.String())
		}
	}
}

// TestMain runs the command line itself where cudareplArgs is set: a
// test that needs a fresh process (NVRTC is loaded once a process) runs
// the test binary again as cudarepl.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(cudareplArgs); ok {
		os.Exit(run(strings.Fields(args), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// cudareplArgs names the variable that makes the test binary cudarepl.
const cudareplArgs = "CUDAREPL_TEST_ARGS"

// runFresh runs cudarepl with args in a process of its own, with env
// added, and returns its stdout and stderr.
func runFresh(t *testing.T, args string, env ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), cudareplArgs+"="+args), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Run()
	return out.String(), errb.String()
}

// TestHide: a name $CUDAREPL_HIDE does not know is said, not ignored; a
// hidden NVRTC says it is hidden, not that it should be installed.
func TestHide(t *testing.T) {
	out, errs := runFresh(t, "version", "CUDAREPL_HIDE=nvrtc,bogus")
	if want := `cudarepl: CUDAREPL_HIDE=nvrtc,bogus: "bogus" is none of driver, nvrtc,`; !strings.Contains(errs, want) {
		t.Errorf("stderr %q lacks %q", errs, want)
	}
	nvrtcLine := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "NVRTC") {
			nvrtcLine = l
		}
	}
	if !strings.Contains(nvrtcLine, "hidden by CUDAREPL_HIDE=nvrtc,bogus") || strings.Contains(nvrtcLine, "install the") {
		t.Errorf("a hidden NVRTC: %q; want it said hidden, without an install hint", nvrtcLine)
	}
}

// TestUsageListsEveryFlag: --help names every flag of every command, as
// the command's own help does, with two dashes.
func TestUsageListsEveryFlag(t *testing.T) {
	for _, c := range subcommands {
		if c.flags == nil {
			continue
		}
		var help bytes.Buffer
		writeSubcommandHelp(&help, c)
		c.flags().VisitAll(func(f *flag.Flag) {
			if !strings.Contains(usage, "--"+f.Name+" ") {
				t.Errorf("the usage lacks %s's --%s", c.name, f.Name)
			}
			if !strings.Contains(help.String(), "  --"+f.Name) {
				t.Errorf("'cudarepl help %s' lacks --%s:\n%s", c.name, f.Name, help.String())
			}
		})
		if !strings.Contains(help.String(), "Examples:\n  cudarepl "+c.name) {
			t.Errorf("'cudarepl help %s' has no example:\n%s", c.name, help.String())
		}
	}
	for _, name := range []string{"lessons", "run", "check", "bench", "profile", "notebooks", "device", "version", "help"} {
		if _, ok := findSubcommand(name); !ok {
			t.Errorf("'cudarepl help %s' knows no such command", name)
		}
	}
}

// TestExamplesRunAsWritten: every example 'cudarepl help' gives names a
// lesson there is and parses; a --step it gives is a step that measures.
func TestExamplesRunAsWritten(t *testing.T) {
	for _, c := range subcommands {
		for _, e := range c.examples {
			words := strings.Fields(e)
			if words[0] != c.name {
				t.Errorf("%s's example %q runs another command", c.name, e)
				continue
			}
			var err error
			switch c.name {
			case "check":
				_, err = parseCheck(words[1:], "cudarepl ")
			case "profile":
				_, err = parseProfile(words[1:], false)
			case "bench":
				var b benchArgs
				var pos []string
				if pos, err = parseArgs(benchFlags(&b), words[1:], "cudarepl help"); err == nil {
					var l *lessons.Lesson
					if l, err = lessons.Find(pos[0]); err == nil && b.step > 0 {
						if a := l.Steps[b.step-1].Action; a == nil || a.Kind() == "kernel" || a.Kind() == "exercise" {
							t.Errorf("%q: step %d of %s measures nothing", e, b.step, l.Slug)
						}
					}
				}
			case "run":
				var pos []string
				if pos, err = parseArgs(runFlags(new(string)), words[1:], "cudarepl help"); err == nil {
					_, err = lessons.Find(pos[0])
				}
			}
			if err != nil {
				t.Errorf("%q: %v", e, err)
			}
		}
	}
}
