//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gpu

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cudarepl/gpu/share"
	"cudarepl/internal/syncbuf"
)

// timedFake is the fake device whose Bench takes its turn as a
// Context's does: the repetitions inside the GPU's lock, a beat of no
// progress while it waits.
type timedFake struct {
	*fakeDevice
	turns *share.Lock
}

func (f timedFake) Bench(b Bench) (Timing, error) {
	if err := b.defaults(); err != nil {
		return Timing{}, err
	}
	var t Timing
	err := f.turns.Timed("bench "+b.Name, "0000:1b:00.0", func() { b.report(0, b.Warmup+b.Reps) }, func() error {
		var err error
		t, err = f.fakeDevice.Bench(b)
		return err
	})
	return t, err
}

var _ = func() bool {
	workerBackends["fake-timed"] = func() (Device, error) {
		return timedFake{&fakeDevice{mem: map[DevicePtr][]byte{}, host: map[HostPtr][]byte{}, next: 0x10000}, &share.Lock{}}, nil
	}
	return true
}()

// TestWorkerBenchWaitsItsTurn: a worker's measurement waits for another
// learner's, longer than the worker's time limit, says so on the
// worker's standard error (which the learner sees), and then runs.
func TestWorkerBenchWaitsItsTurn(t *testing.T) {
	t.Setenv(share.LockEnv, filepath.Join(t.TempDir(), "locks")) // the worker inherits the lock folder
	stderr := &syncbuf.Buffer{}
	const limit = 2 * time.Second // the worker beats every second (share.Lock's Beat) while it waits
	w, err := Open(Options{Timeout: limit, backend: "fake-timed", Stderr: stderr})
	if err != nil {
		t.Fatalf("Open(fake-timed) = %v", err)
	}
	defer w.Close()
	slow := fakeKernel(t, w, "slow")
	// Another learner times: this process holds the GPU's lock, which
	// excludes the worker's as another process's would.
	held, release := make(chan struct{}), make(chan struct{})
	go new(share.Lock).Timed("hold", "0000:1b:00.0", func() {}, func() error {
		close(held)
		<-release
		return nil
	})
	<-held
	hold := 2 * limit
	time.AfterFunc(hold, func() { close(release) })
	start := time.Now()
	var dones []int
	tm, err := w.Bench(Bench{Ops: [][]Op{{Launch{Kernel: slow, Grid: Dim(1), Block: Dim(1)}}}, Warmup: 1, Reps: 2,
		Progress: func(done, total int) { dones = append(dones, done) }})
	if err != nil {
		t.Fatalf("Bench while another learner times for %s, with a %s limit = %v; want it to wait its turn", hold, limit, err)
	}
	if waited := time.Since(start); waited < hold || len(tm.Device) != 2 {
		t.Errorf("Bench returned %d times after %s; want 2, after the other learner's %s", len(tm.Device), waited, hold)
	}
	if len(dones) == 0 || dones[0] != 0 || dones[len(dones)-1] != 3 {
		t.Errorf("progress while waiting and running = %v; want 0s while it waits, then up to 3", dones)
	}
	for deadline := time.Now().Add(2 * time.Second); !strings.Contains(stderr.String(), share.WaitingMessage) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := stderr.String(); strings.Count(got, share.WaitingMessage) != 1 {
		t.Errorf("the worker said %q; want %q once", got, share.WaitingMessage)
	}
	if w.Restarts() != 0 {
		t.Errorf("the worker was restarted %d times while it waited; the wait must not count against its time limit", w.Restarts())
	}
}
