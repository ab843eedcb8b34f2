package main

import (
	"bytes"
	"context"
	"errors"
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
		{"version", []string{"version"}, 0, "cudarepl 0.1.0-dev", ""},
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
	workspace(t)
	tests := []struct {
		desc       string
		args       []string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{"lessons", []string{"lessons"}, 0, "2  vector-add", ""},
		{"run needs a lesson", []string{"run"}, 2, "", "usage: cudarepl run <lesson>"},
		{"run an unknown lesson", []string{"run", "nope"}, 2, "", `cudarepl: lessons: no lesson "nope" (there are: hello-gpu, vector-add, `},
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
		{"bench an unknown flag", []string{"bench", "2", "--fast"}, 2, "", "flag provided but not defined: -fast"},
		{"profile needs a lesson", []string{"profile"}, 2, "", "usage: cudarepl profile <lesson>"},
		{"profile --variant needs --kernel", []string{"profile", "2", "--variant", "x"}, 2, "", "usage: cudarepl profile"},
		{"profile --json without a GPU", []string{"profile", "2", "--json", "/tmp/x.json"}, 1, "", "--json: no GPU here"},
		{"profile an unknown variant", []string{"profile", "2", "vadd_v9"}, 1, "", "vector-add has no variant vadd_v9 to profile"},
		{"profile --step of prose", []string{"profile", "2", "--step", "1"}, 1, "", "step 1 of vector-add is not a sweep"},
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
