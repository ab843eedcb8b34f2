//go:build unix

package gpu_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cudarepl/gpu"
	"cudarepl/gpu/remote"
)

// sshTestEnv names the host these tests reach over ssh, with the
// configuration $CUDAREPL_SSH_CONFIG names; scripts/ci/remote.sh starts an
// sshd on localhost and sets both. Its configuration must also name the
// hosts "refused" (a key the server does not accept), "unknown-key" (a
// server whose host key is not known) and "closed-port" (nothing
// listening).
const sshTestEnv = "CUDAREPL_TEST_SSH"

// sshHostForTest is the host to test over ssh, or skips t.
func sshHostForTest(t *testing.T) string {
	t.Helper()
	h := os.Getenv(sshTestEnv)
	if h == "" || os.Getenv(remote.SSHConfigEnv) == "" {
		t.Skipf("no sshd to test with: scripts/ci/remote.sh starts one and sets $%s and $%s", sshTestEnv, remote.SSHConfigEnv)
	}
	return h
}

// fakeCudarepl writes a program at dir/name that stands for a cudarepl on
// the host: script is its body.
func fakeCudarepl(t *testing.T, dir, name, script string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRemoteOverSSH runs the fake worker on the other end of a real ssh
// connection, started as --remote starts one: calls, a fault, a hang, the
// ssh killed in the middle of a call, and the time an empty request
// takes.
func TestRemoteOverSSH(t *testing.T) {
	host := sshHostForTest(t)
	dir := t.TempDir()
	exe := fakeCudarepl(t, dir, "cudarepl", "exec env "+remoteWorkerEnv+"=1 '"+os.Args[0]+"' -test.run='^TestRemoteWorkerProcess$'")
	r, err := remote.SSH(host + ":" + exe)
	if err != nil {
		t.Fatal(err)
	}
	w, err := gpu.OpenBackend(gpu.Options{Timeout: 10 * time.Second, Stderr: io.Discard, Remote: r}, "fake")
	if err != nil {
		t.Fatalf("Open over ssh = %v", err)
	}
	defer w.Close()
	if w.Host() != host {
		t.Errorf("Host() = %q, want %q", w.Host(), host)
	}
	gpu.FillAndCheck(t, w, gpu.FakeKernel(t, w, "fill"), 4)
	child := gpu.OpenFake(t, 5*time.Second)
	pipe := openRemote(t, helperCommand("1"), 5*time.Second, nil)
	m := medianCalls(t, 2000, child, pipe, w)
	t.Logf("empty request: median %v through a child, %v through a pipe, %v over ssh to %s", m[0], m[1], m[2], host)

	for _, k := range []struct {
		kernel string
		limit  time.Duration
		cause  string
	}{
		{"crash", 10 * time.Second, "killed the worker (signal: killed)"},
		{"hang", time.Second, "ran past the 1s time limit"},
		{"fault", 10 * time.Second, "faulted: CUDA_ERROR_ILLEGAL_ADDRESS"},
	} {
		w.SetTimeout(k.limit)
		err := w.Launch(gpu.Launch{Kernel: gpu.FakeKernel(t, w, k.kernel), Grid: gpu.Dim(1), Block: gpu.Dim(1)})
		if err == nil || !strings.Contains(err.Error(), k.cause+"; a fresh worker was started") {
			t.Errorf("Launch(%s) over ssh = %v, want %q", k.kernel, err, k.cause)
		}
		gpu.FillAndCheck(t, w, gpu.FakeKernel(t, w, "fill"), 5)
	}

	// The ssh client dies in the middle of a call.
	w.SetTimeout(5 * time.Second)
	hang := gpu.FakeKernel(t, w, "hang")
	pid := w.CommandPID()
	time.AfterFunc(300*time.Millisecond, func() { syscall.Kill(pid, syscall.SIGKILL) })
	err = w.Run(gpu.Launch{Kernel: hang, Grid: gpu.Dim(1), Block: gpu.Dim(1)})
	var ce *gpu.ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "the connection to "+host+" was lost") {
		t.Fatalf("a call while ssh is killed = %v, want the connection to %s lost", err, host)
	}
	t.Logf("reported: %v", err)
	if _, _, err := w.MemInfo(); !errors.As(err, &ce) {
		t.Errorf("MemInfo before Reconnect = %v, want the lost connection again", err)
	}
	w.Reconnect()
	gpu.FillAndCheck(t, w, gpu.FakeKernel(t, w, "fill"), 6)
}

// TestSSHFailures: a bad host, a refused key, an unknown host key, a
// closed port, no cudarepl there, and a cudarepl of another protocol
// each give one sentence, in seconds.
func TestSSHFailures(t *testing.T) {
	host := sshHostForTest(t)
	dir := t.TempDir()
	old := fakeCudarepl(t, dir, "old", `echo "cudarepl-worker 0 0.0.1 linux/amd64"; exec cat >/dev/null`)
	noWorker := fakeCudarepl(t, dir, "noworker", `echo 'cudarepl: unknown command "worker" (try '"'"'cudarepl help'"'"')' >&2; exit 2`)
	tests := []struct {
		target, want string
		binary       bool
	}{
		{"nosuchhost.invalid", "gpu: cannot reach nosuchhost.invalid over ssh: Could not resolve hostname nosuchhost.invalid", false},
		{"refused", "gpu: refused refused the ssh key (", false},
		{"unknown-key", "gpu: the host key of unknown-key is not known here (Host key verification failed.): run 'ssh unknown-key' once", false},
		{"closed-port", "gpu: cannot reach closed-port over ssh: connect to host", false},
		{host + ":" + filepath.Join(dir, "none"), "gpu: " + host + " has no cudarepl (looked for " + filepath.Join(dir, "none") + "): run cudarepl with --remote-install to copy this one", true},
		{host + ":" + old, "gpu: the cudarepl on " + host + " (0.0.1) speaks worker protocol 0, and this one speaks 2: run cudarepl with --remote-install", true},
		{host + ":" + noWorker, "gpu: the cudarepl on " + host + " has no worker command (it is older than remote workers): run cudarepl with --remote-install", true},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r, err := remote.SSH(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = gpu.OpenBackend(gpu.Options{Timeout: time.Second, Stderr: io.Discard, Remote: r}, "fake")
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open(%s) =\n%v\nwant one line starting\n%s", tt.target, err, tt.want)
			}
			var be *remote.BinaryError
			if errors.As(err, &be) != tt.binary || be != nil && !be.Installable {
				t.Errorf("Open(%s) = %#v, want a remote.BinaryError %v, installable", tt.target, err, tt.binary)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("Open(%s) took %v", tt.target, d)
			}
			t.Logf("%v (%v)", err, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestSSHInstall copies a program to the host where --remote finds it.
func TestSSHInstall(t *testing.T) {
	host := sshHostForTest(t)
	dest := filepath.Join(t.TempDir(), "sub", "cudarepl")
	r, err := remote.SSH(host + ":" + dest)
	if err != nil {
		t.Fatal(err)
	}
	where, err := remote.Install(r, os.Args[0])
	if err != nil || where != host+":"+dest {
		t.Fatalf("Install = %q, %v; want %s:%s", where, err, host, dest)
	}
	got, err := os.Stat(dest)
	want, _ := os.Stat(os.Args[0])
	if err != nil || got.Size() != want.Size() || got.Mode().Perm()&0o100 == 0 {
		t.Errorf("the copy: %v, %v; want %d bytes, executable", got, err, want.Size())
	}
	bad, _ := remote.SSH("nosuchhost.invalid")
	if _, err := remote.Install(bad, os.Args[0]); err == nil || !strings.HasPrefix(err.Error(), "gpu: cannot reach nosuchhost.invalid over ssh") {
		t.Errorf("Install to a bad host = %v", err)
	}
}
