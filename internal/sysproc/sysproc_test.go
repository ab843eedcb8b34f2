package sysproc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// sysprocRoleEnv makes the test binary play a part in a sysproc test: a
// worker that answers on its pipe ("pipes"), a worker that starts a child
// ("tree"), or that child ("leaf").
const sysprocRoleEnv = "CUDAREPL_TEST_SYSPROC"

// The part is played from init, before any test runs.
func init() {
	switch os.Getenv(sysprocRoleEnv) {
	case "pipes":
		in, out, err := Conn()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print("A")     // os.Stdout, which must not be the pipe
		writeStdoutFD("B") // what a C library writes to its stdout
		line, _ := bufio.NewReader(in).ReadString('\n')
		fmt.Fprint(out, "C:"+line) // the pipe
		os.Exit(0)
	case "tree":
		leaf := exec.Command(os.Args[0])
		leaf.Env = append(os.Environ(), sysprocRoleEnv+"=leaf")
		leaf.Stdout = os.Stdout // holds the test's pipe open while it lives
		if err := leaf.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("ready")
		time.Sleep(time.Minute)
		os.Exit(0)
	case "leaf":
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// TestWorkerPipes: a worker reads calls from, and writes replies to, the
// pipe Pipes gives it and Conn finds (fds 3 and 4; stdin and
// stdout on Windows), and what else it writes to its stdout, by Go or by a
// C library, goes to stderr.
func TestWorkerPipes(t *testing.T) {
	callsR, callsW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repliesR, repliesW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), sysprocRoleEnv+"=pipes")
	var stderr bytes.Buffer
	Pipes(cmd, callsR, repliesW, &stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	callsR.Close()
	repliesW.Close()
	callsW.Write([]byte("call\n"))
	callsW.Close()
	reply, _ := io.ReadAll(repliesR)
	repliesR.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker: %v; stderr: %s", err, stderr.String())
	}
	if string(reply) != "C:call\n" {
		t.Errorf("the pipe carried %q; want only the reply %q", reply, "C:call\n")
	}
	if !strings.Contains(stderr.String(), "A") || !strings.Contains(stderr.String(), "B") {
		t.Errorf("stderr = %q; want A (from Go) and B (from the stdout of C)", stderr.String())
	}
}

// TestKillTree: killing a worker kills what it started too, such as the
// worker that a wrapper (compute-sanitizer) starts. The leaf holds the
// write end of a pipe; the pipe ends only when every holder is gone.
func TestKillTree(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), sysprocRoleEnv+"=tree")
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	cmd.SysProcAttr = Attr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	br := bufio.NewReader(r)
	if line, err := br.ReadString('\n'); strings.TrimSpace(line) != "ready" {
		KillTree(cmd.Process)
		t.Fatalf("the worker did not start its child: %q, %v", line, err)
	}
	KillTree(cmd.Process)
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, br); ended <- err }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's child outlived KillTree by 10 s")
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker outlived KillTree by 10 s")
	}
}
