//go:build unix

package remote

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"cudarepl/gpu"
)

// TestBinaryErrorFixes: what the sentence tells to do, by what is
// known of the host.
func TestBinaryErrorFixes(t *testing.T) {
	here := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		e    BinaryError
		want string
	}{
		{BinaryError{Host: "gpu1", Problem: "gpu1 has no cudarepl (…)", Platform: "Linux x86_64", Installable: true},
			"gpu: gpu1 has no cudarepl (…): run cudarepl with --remote-install to copy this one (" + here + ") to ~/.cache/cudarepl/worker-2/cudarepl there, or install there a cudarepl that speaks worker protocol 2"},
		{BinaryError{Host: "gpu1", Problem: "gpu1 has no cudarepl (…)", Platform: "Linux riscv64"},
			"gpu: gpu1 has no cudarepl (…): gpu1 runs Linux riscv64 and this cudarepl is built for " + here + ": build one for it (GOOS=linux GOARCH=riscv64 CGO_ENABLED=0 go build ./cmd/cudarepl) and copy it to ~/.cache/cudarepl/worker-2/cudarepl there"},
		{BinaryError{Host: "box", Problem: "box has no cudarepl"},
			"gpu: box has no cudarepl: install there a cudarepl that speaks worker protocol 2 (this one does), where the worker command finds it"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
		}
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"ssh gpu1 cudarepl worker", []string{"ssh", "gpu1", "cudarepl", "worker"}, false},
		{`docker exec -i "my box" cudarepl  worker`, []string{"docker", "exec", "-i", "my box", "cudarepl", "worker"}, false},
		{`sh -c 'echo "$HOME"; exit'`, []string{"sh", "-c", `echo "$HOME"; exit`}, false},
		{`a\ b "c\"d" e''f`, []string{"a b", `c"d`, "ef"}, false},
		{`'open`, nil, true},
		{`"open`, nil, true},
		{"", nil, false},
	}
	for _, tt := range tests {
		got, err := splitWords(tt.in)
		if !slices.Equal(got, tt.want) || (err != nil) != tt.err {
			t.Errorf("splitWords(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestSSHHost(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"ssh", "gpu1", "cudarepl", "worker"}, "gpu1"},
		{[]string{"/usr/bin/ssh", "-p", "2222", "-F", "cfg", "-T", "me@gpu1", "cudarepl", "worker"}, "gpu1"},
		{[]string{"ssh", "-o", "BatchMode=yes", "--", "me@box", "x"}, "box"},
		{[]string{"docker", "exec", "-i", "box"}, ""},
	}
	for _, tt := range tests {
		if got := sshHost(tt.argv); got != tt.want {
			t.Errorf("sshHost(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

func TestSSH(t *testing.T) {
	t.Setenv(SSHConfigEnv, "/tmp/cfg")
	tests := []struct {
		target, name, dest, script string
		err                        string
	}{
		{"gpu1", "gpu1", "gpu1", `"$HOME/.cache/cudarepl/worker-2/cudarepl" "$(command -v cudarepl)"`, ""},
		{"me@gpu1:bin/cudarepl", "gpu1", "me@gpu1", `for c in "bin/cudarepl"; do`, ""},
		{"gpu1:~/my tools/cudarepl", "gpu1", "gpu1", `for c in "$HOME/my tools/cudarepl"; do`, ""},
		{"[::1]:/opt/c", "::1", "[::1]", `for c in "/opt/c"; do`, ""},
		{"", "", "", "", "names no host"},
		{"me@", "", "", "", "names no host"},
		{"-oProxyCommand=x", "", "", "", "is not a host name"},
		{"gpu1;reboot", "", "", "", "is not a host name"},
	}
	for _, tt := range tests {
		r, err := SSH(tt.target)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("SSH(%q) = %v, want an error saying it %s", tt.target, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("SSH(%q) = %v", tt.target, err)
			continue
		}
		n := len(r.Argv)
		if r.Name != tt.name || r.Argv[0] != "ssh" || r.Argv[1] != "-F" || r.Argv[2] != "/tmp/cfg" || !slices.Contains(r.Argv, "BatchMode=yes") ||
			r.Argv[n-3] != "--" || r.Argv[n-2] != tt.dest || !strings.HasPrefix(r.Argv[n-1], "sh -c '") || !strings.Contains(r.Argv[n-1], tt.script) {
			t.Errorf("SSH(%q) = %q named %q; want %s named %s running %s", tt.target, r.Argv, r.Name, tt.dest, tt.name, tt.script)
		}
	}
}

// TestSSHScript runs the script a host's shell runs, here, with a fake
// home: it finds the installed copy first, then one on PATH, else says
// it found none.
func TestSSHScript(t *testing.T) {
	home := t.TempDir()
	bin := t.TempDir()
	run := func() string {
		r, _ := SSH("host")
		script, _ := splitWords(r.Argv[len(r.Argv)-1])
		cmd := exec.Command(script[0], script[1:]...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + bin + ":/usr/bin:/bin"}
		out, _ := cmd.Output()
		return string(out)
	}
	if got := run(); !strings.HasPrefix(got, "cudarepl-host ") || !strings.HasSuffix(got, "\ncudarepl-missing\n") {
		t.Errorf("with no cudarepl the script says %q", got)
	}
	fake := func(path, says string) {
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte("#!/bin/sh\necho "+says+" \"$@\"\n"), 0o755)
	}
	fake(filepath.Join(bin, "cudarepl"), "on-path")
	if got := run(); !strings.HasSuffix(got, "\non-path worker\n") {
		t.Errorf("with a cudarepl on PATH the script says %q", got)
	}
	fake(filepath.Join(home, remoteCache), "installed")
	if got := run(); !strings.HasSuffix(got, "\ninstalled worker\n") {
		t.Errorf("with an installed copy the script says %q", got)
	}
}

func TestUnamePlatform(t *testing.T) {
	tests := []struct{ uname, goos, goarch string }{
		{"Linux x86_64", "linux", "amd64"},
		{"Linux aarch64", "linux", "arm64"},
		{"Darwin arm64", "darwin", "arm64"},
		{"Linux ppc64le", "linux", "ppc64le"},
		{"SunOS sun4v", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		if goos, goarch := unamePlatform(tt.uname); goos != tt.goos || goarch != tt.goarch {
			t.Errorf("unamePlatform(%q) = %s/%s, want %s/%s", tt.uname, goos, goarch, tt.goos, tt.goarch)
		}
	}
}

func TestSSHFailure(t *testing.T) {
	tests := []struct{ said, want string }{
		{"me@gpu1: Permission denied (publickey).", "gpu: gpu1 refused the ssh key (me@gpu1: Permission denied (publickey).): 'ssh gpu1' must log in without a password"},
		{"Host key verification failed.", "gpu: the host key of gpu1 is not known here (Host key verification failed.): run 'ssh gpu1' once to check it and accept it"},
		{"ssh: Could not resolve hostname gpu1: Name or service not known", "gpu: cannot reach gpu1 over ssh: Could not resolve hostname gpu1: Name or service not known (is the name right, or in ~/.ssh/config?)"},
		{"ssh: connect to host gpu1 port 22: Connection refused", "gpu: cannot reach gpu1 over ssh: connect to host gpu1 port 22: Connection refused"},
		{"", "gpu: cannot reach gpu1 over ssh: exit status 255"},
	}
	for _, tt := range tests {
		err := sshFailure("gpu1", errors.New("exit status 255"), tt.said)
		if !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("sshFailure(%q) =\n%v\nwant prefix\n%s", tt.said, err, tt.want)
		}
	}
}

// TestFrames: frames cross as they were written, and a frame larger
// than any may be is refused.
func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	fw := &frameWriter{w: &buf}
	fw.frame(frameExit, []byte("signal: killed"))
	fw.beat()
	big := bytes.Repeat([]byte("x"), 3<<20)
	fw.Write(big)
	br := bufio.NewReader(&buf)
	var kinds []byte
	var data []byte
	for {
		k, p, err := readFrame(br)
		if err != nil {
			break
		}
		kinds = append(kinds, k)
		if k == frameData {
			data = append(data, p...)
		}
	}
	if string(kinds) != "xhddd" || !bytes.Equal(data, big) {
		t.Errorf("frames %q with %d bytes of data, want \"xhddd\" with %d", kinds, len(data), len(big))
	}
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader([]byte{'d', 0xff, 0xff, 0xff, 0xff}))); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("readFrame(4 GiB) = %v, want it refused", err)
	}
}

// TestRegistered: importing this package makes gpu.Open's default the
// Transport the environment names, and no Transport where it names none.
func TestRegistered(t *testing.T) {
	t.Setenv(CommandEnv, "")
	t.Setenv(HostEnv, "")
	if tr, err := gpu.DefaultRemote(); tr != nil || err != nil {
		t.Errorf("DefaultRemote() with neither variable = %#v, %v; want nil, nil", tr, err)
	}
	t.Setenv(HostEnv, "me@gpu1")
	if tr, err := gpu.DefaultRemote(); err != nil || tr == nil || tr.Host() != "gpu1" {
		t.Errorf("DefaultRemote() with %s=me@gpu1 = %v, %v; want the Transport to gpu1", HostEnv, tr, err)
	}
	t.Setenv(CommandEnv, "'open")
	if _, err := gpu.DefaultRemote(); err == nil || !strings.Contains(err.Error(), "(from "+CommandEnv+")") {
		t.Errorf("DefaultRemote() with a broken %s = %v; want an error that names it", CommandEnv, err)
	}
}
