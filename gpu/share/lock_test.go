//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package share

import (
	"bufio"
	"cudarepl/internal/syncbuf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestGPULockPath(t *testing.T) {
	tests := []struct {
		setting, pci, want string
	}{
		{"", "0000:1B:00.0", "/tmp/cudarepl-gpu-locks/gpu-0000_1b_00.0.lock"},
		{"/var/lib/cudarepl/gpu-locks", "0000:41:00.0", "/var/lib/cudarepl/gpu-locks/gpu-0000_41_00.0.lock"},
		{"/srv/locks", "", "/srv/locks/gpu-unknown.lock"},
		{"/srv/locks", "../../etc/passwd", "/srv/locks/gpu-.._.._etc_passwd.lock"},
		{"off", "0000:1b:00.0", ""},
		{"OFF", "0000:1b:00.0", ""},
	}
	for _, tt := range tests {
		if got := lockPath(tt.setting, tt.pci); got != tt.want {
			t.Errorf("lockPath(%q, %q) = %q; want %q", tt.setting, tt.pci, got, tt.want)
		}
	}
}

// lockHolderEnv makes the test binary a process that holds a GPU's lock:
// its value is the lock folder and the PCI address, split by a newline.
const lockHolderEnv = "CUDAREPL_TEST_LOCK_HOLDER"

// Started by holdLock, the test binary takes the lock, says "held", keeps
// the lock until its standard input closes, and exits: before any test
// runs, so that it is no test of its own.
func init() {
	v := os.Getenv(lockHolderEnv)
	if v == "" {
		return
	}
	dir, pci, _ := strings.Cut(v, "\n")
	os.Setenv(LockEnv, dir)
	var l Lock
	l.Timed("hold", pci, func() {}, func() error {
		os.Stdout.WriteString("held\n")
		io.Copy(io.Discard, os.Stdin)
		return nil
	})
	os.Exit(0)
}

// holder is another process holding a GPU's lock.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// holdLock starts a process that holds the lock of GPU pci in dir, and
// returns once it holds it.
func holdLock(t *testing.T, dir, pci string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir+"\n"+pci)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the lock holder: %v", err)
	}
	h := &holder{cmd, stdin}
	t.Cleanup(func() { h.cmd.Process.Kill(); h.cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		if s != "held\n" {
			t.Fatalf("the lock holder said %q; want \"held\"", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lock holder did not take the lock within 10 s")
	}
	return h
}

// release makes the holder let go and exit.
func (h *holder) release() { h.stdin.Close() }

// lockSetup points the lock at a fresh folder and returns a Lock whose
// messages go to the buffer it returns, with short beats, for one test.
func lockSetup(t *testing.T) (dir string, l *Lock, out *syncbuf.Buffer) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "locks")
	t.Setenv(LockEnv, dir)
	out = &syncbuf.Buffer{}
	return dir, &Lock{Out: out, Beat: 20 * time.Millisecond}, out
}

// timedAsync runs l.Timed in a goroutine and returns a channel that gets
// its error once f has run, and a count of its beats.
func timedAsync(l *Lock, pci string) (done chan error, ran *atomic.Bool, beats *atomic.Int32) {
	done, ran, beats = make(chan error, 1), &atomic.Bool{}, &atomic.Int32{}
	go func() {
		done <- l.Timed("bench vadd n=2^26", pci, func() { beats.Add(1) }, func() error {
			ran.Store(true)
			return nil
		})
	}()
	return done, ran, beats
}

func TestGPULockSecondWaitsAndSaysSo(t *testing.T) {
	dir, l, out := lockSetup(t)
	const pci = "0000:1b:00.0"
	h := holdLock(t, dir, pci)
	done, ran, beats := timedAsync(l, pci)
	time.Sleep(300 * time.Millisecond)
	if ran.Load() {
		t.Fatal("a timed region ran while another process held the GPU's lock")
	}
	if got := out.String(); got != WaitingMessage+"\n" {
		t.Errorf("while waiting it said %q; want %q once", got, WaitingMessage)
	}
	if beats.Load() == 0 {
		t.Error("no progress was reported while waiting: the worker's time limit would fire")
	}
	start := time.Now()
	h.release()
	select {
	case err := <-done:
		if err != nil || !ran.Load() {
			t.Errorf("Timed = %v (ran %v); want it to run once the lock is free", err, ran.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the timed region did not run within 5 s of the lock's release")
	}
	t.Logf("ran %s after the holder let go", time.Since(start))
}

func TestGPULockCrashedHolderReleasesIt(t *testing.T) {
	dir, l, _ := lockSetup(t)
	const pci = "0000:1b:00.0"
	h := holdLock(t, dir, pci)
	done, ran, _ := timedAsync(l, pci)
	time.Sleep(100 * time.Millisecond)
	if ran.Load() {
		t.Fatal("a timed region ran while another process held the GPU's lock")
	}
	h.cmd.Process.Signal(syscall.SIGKILL) // as the OOM killer, or the worker's time limit, would
	select {
	case err := <-done:
		if err != nil || !ran.Load() {
			t.Errorf("Timed = %v (ran %v); want it to run once the holder died", err, ran.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a holder killed with SIGKILL still held the lock 5 s later")
	}
	// Killed before anyone waits, it leaves nothing to wait for either.
	h2 := holdLock(t, dir, pci)
	h2.cmd.Process.Signal(syscall.SIGKILL)
	h2.cmd.Wait()
	done, ran, _ = timedAsync(l, pci)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the lock of a holder killed earlier is still held")
	}
}

func TestGPULockOtherGPUDoesNotWait(t *testing.T) {
	dir, l, out := lockSetup(t)
	holdLock(t, dir, "0000:1b:00.0")
	done, _, _ := timedAsync(l, "0000:41:00.0")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Timed on another GPU = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("timing on one GPU waited for another GPU's lock")
	}
	if out.String() != "" {
		t.Errorf("timing on a free GPU said %q; want nothing", out.String())
	}
}

func TestGPULockWaitLimit(t *testing.T) {
	dir, l, _ := lockSetup(t)
	l.Wait = 200 * time.Millisecond
	const pci = "0000:1b:00.0"
	h := holdLock(t, dir, pci)
	done, ran, _ := timedAsync(l, pci)
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end at its limit")
	}
	if ran.Load() || err == nil || !strings.Contains(err.Error(), "gpu-0000_1b_00.0.lock another process holds") || !strings.Contains(err.Error(), "lslocks") {
		t.Errorf("Timed past the wait limit = %v (ran %v); want an error naming the lock file and lslocks, and nothing run", err, ran.Load())
	}
	// The wait given up on leaves no lock behind: once the holder goes,
	// the next measurement takes it at once.
	h.release()
	h.cmd.Wait()
	done, _, _ = timedAsync(l, pci)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Timed after the holder left = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a wait given up on left the lock held")
	}
}

func TestGPULockFolderForEveryone(t *testing.T) {
	dir, l, _ := lockSetup(t)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	if err := l.Timed("bench x", "0000:1b:00.0", func() {}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode()&os.ModePerm != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("lock folder %s: %v, %v; want drwxrwxrwt, so that every learner can make a GPU's lock", dir, fi.Mode(), err)
	}
	fi, err = os.Stat(filepath.Join(dir, "gpu-0000_1b_00.0.lock"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("lock file: %v, %v; want -rw-r--r--, so that every learner can open it", fi.Mode(), err)
	}
}

func TestGPULockUnusableTimesWithoutIt(t *testing.T) {
	_, l, out := lockSetup(t)
	notDir := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(notDir, nil, 0o644)
	t.Setenv(LockEnv, notDir)
	for range 2 {
		ran := false
		if err := l.Timed("bench x", "0000:1b:00.0", func() {}, func() error { ran = true; return nil }); err != nil || !ran {
			t.Errorf("Timed with an unusable lock = %v (ran %v); want it to run without the lock", err, ran)
		}
	}
	if got := out.String(); strings.Count(got, "timing without the GPU's lock") != 1 || !strings.Contains(got, LockEnv) {
		t.Errorf("with an unusable lock it said %q; want one warning that names %s", got, LockEnv)
	}
}

func TestGPULockOff(t *testing.T) {
	dir, l, out := lockSetup(t)
	holdLock(t, dir, "0000:1b:00.0")
	t.Setenv(LockEnv, "off")
	done, _, _ := timedAsync(l, "0000:1b:00.0")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("with %s=off a measurement waited for the lock", LockEnv)
	}
	if out.String() != "" {
		t.Errorf("with the lock off it said %q; want nothing", out.String())
	}
}
