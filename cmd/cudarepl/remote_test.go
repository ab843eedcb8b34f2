//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cmdWorkerEnv makes the test binary 'cudarepl worker' (TestWorkerProcess).
const cmdWorkerEnv = "CUDAREPL_TEST_CMD_WORKER"

// TestWorkerProcess is not a test: run with cmdWorkerEnv set, it is
// 'cudarepl worker' on its stdin and stdout, the real command.
func TestWorkerProcess(t *testing.T) {
	if os.Getenv(cmdWorkerEnv) == "" {
		t.Skip("a helper process: 'cudarepl worker'")
	}
	os.Exit(run([]string{"worker"}, os.Stdout, os.Stderr))
}

// workerCmd is a --worker-cmd that runs this test binary as 'cudarepl
// worker': a worker over a pipe, as ssh gives one, on this machine.
func workerCmd() string {
	return fmt.Sprintf("env %s=1 %s -test.run=^TestWorkerProcess$", cmdWorkerEnv, strconv.Quote(os.Args[0]))
}

// noRemote keeps what a test's remote flags set to the test.
func noRemote(t *testing.T) {
	t.Setenv(remoteEnv, "")
	t.Setenv(workerCmdEnv, "")
}

func TestRemoteArgs(t *testing.T) {
	tests := []struct {
		args      []string
		rest      []string
		remote    string
		workerCmd string
		err       string
	}{
		{[]string{"check", "2"}, []string{"check", "2"}, "", "", ""},
		{[]string{"--remote", "gpu1", "check", "2"}, []string{"check", "2"}, "gpu1", "", ""},
		{[]string{"check", "2", "--remote=me@gpu1:bin/cudarepl"}, []string{"check", "2"}, "me@gpu1:bin/cudarepl", "", ""},
		{[]string{"-remote", "gpu1"}, nil, "gpu1", "", ""},
		{[]string{"--worker-cmd", "ssh -p 2222 gpu1 cudarepl worker", "device"}, []string{"device"}, "", "ssh -p 2222 gpu1 cudarepl worker", ""},
		{[]string{"check", "--", "--remote", "x"}, []string{"check", "--", "--remote", "x"}, "", "", ""},
		{[]string{"--remote"}, nil, "", "", "--remote needs a host, [user@]host[:path] after it"},
		{[]string{"--remote", " "}, nil, "", "", "--remote is empty: give a host"},
		{[]string{"--remote", "a", "--worker-cmd", "b"}, nil, "", "", "--remote and --worker-cmd both say where the worker runs: give one"},
		{[]string{"--remote-install=yes"}, nil, "", "", "--remote-install takes no value"},
		{[]string{"--remote-install", "device"}, nil, "", "", "--remote-install copies cudarepl over ssh to the host that --remote"},
		{[]string{"--worker-cmd", "x", "--remote-install"}, nil, "", "", "give --remote HOST too"},
	}
	for _, tt := range tests {
		noRemote(t)
		rest, err := remoteArgs(tt.args, &bytes.Buffer{})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("remoteArgs(%q) = %v, want an error with %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(rest, tt.rest) || os.Getenv(remoteEnv) != tt.remote || os.Getenv(workerCmdEnv) != tt.workerCmd {
			t.Errorf("remoteArgs(%q) = %q, %v with remote %q, worker command %q; want %q with %q, %q",
				tt.args, rest, err, os.Getenv(remoteEnv), os.Getenv(workerCmdEnv), tt.rest, tt.remote, tt.workerCmd)
		}
	}
}

// TestRemoteCommands runs commands with their GPU work through a pipe to
// 'cudarepl worker' (this machine has no GPU: the worker says so, and the
// commands replay), and with a worker command that finds no cudarepl:
// one sentence, at once, no question asked.
func TestRemoteCommands(t *testing.T) {
	replayOnly(t)
	workspace(t)
	tests := []struct {
		desc       string
		args       []string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{"device: the worker says there is no GPU there", []string{"--worker-cmd", workerCmd(), "device"}, 0,
			"gpu: on the worker (env " + cmdWorkerEnv + "=1", ""},
		{"version: the same", []string{"version", "--worker-cmd", workerCmd()}, 0, "no NVIDIA driver found (libcuda.so.1): lessons replay", ""},
		{"a check replays through the pipe", []string{"--worker-cmd", workerCmd(), "check", "vector-add", "--variant", "vadd_v2"}, 0, "vadd_v2", ""},
		{"no cudarepl there", []string{"--worker-cmd", "sh -c 'echo cudarepl-missing'", "device"}, 1, "",
			"cudarepl: gpu: the worker (sh -c 'echo cudarepl-missing') has no cudarepl (looked in ~/.cache/cudarepl/worker-2, on the PATH of a non-interactive shell, in ~/go/bin and in ~/.local/bin): install there a cudarepl that speaks worker protocol 2"},
		{"a bad host", []string{"--remote", "gpu1;reboot", "device"}, 1, "", `cudarepl: gpu: remote "gpu1;reboot" is not a host name`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			noRemote(t)
			var out, errb bytes.Buffer
			start := time.Now()
			status := run(tt.args, &out, &errb)
			if status != tt.wantStatus || !strings.Contains(out.String(), tt.wantOut) || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("run(%q) = %d\nstdout %q\nstderr %q\nwant %d, %q, %q", tt.args, status, out.String(), errb.String(), tt.wantStatus, tt.wantOut, tt.wantErr)
			}
			if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); tt.wantErr != "" && n > 0 {
				t.Errorf("stderr has %d lines, want one sentence:\n%s", n+1, errb.String())
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("run(%q) took %v", tt.args, d)
			}
		})
	}
}

// TestRemoteREPLAndNotebook: the REPL and a notebook's cells through a
// worker on the other end of a pipe: replay, the workspace and the
// executed notebook here.
func TestRemoteREPLAndNotebook(t *testing.T) {
	replayOnly(t)
	home := workspace(t)
	noRemote(t)
	t.Setenv(workerCmdEnv, workerCmd())
	var out bytes.Buffer
	status := runREPL(io.NopCloser(strings.NewReader("open 2\nstep 6\nquit\n")), &out, &out, false, nil)
	if status != 0 || !strings.Contains(out.String(), "gpu: on the worker (env") || !strings.Contains(out.String(), "replay mode") {
		t.Errorf("the REPL through a pipe = %d:\n%s", status, out.String())
	}
	nb := filepath.Join(home, "02.ipynb")
	var errb bytes.Buffer
	out.Reset()
	if status := run([]string{"notebooks", "run", "../../notebooks/02-vector-add.ipynb", "--out", nb}, &out, &errb); status != 0 {
		t.Fatalf("notebooks run through a pipe = %d\n%s\n%s", status, out.String(), errb.String())
	}
	b, err := os.ReadFile(nb)
	if err != nil || !strings.Contains(out.String(), "gpu: on the worker (env") || !strings.Contains(string(b), "recorded") {
		t.Errorf("the executed notebook (%v), after %q, does not replay", err, out.String())
	}
}
