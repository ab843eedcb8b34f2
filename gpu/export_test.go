package gpu

import (
	"testing"
	"time"
)

// What the tests of package gpu_test reach inside this one: they run a
// Worker through package gpu/remote, which imports gpu, so they cannot be
// in package gpu, and they need its fake workers.

// OpenBackend is Open with the worker serving backend, a fake.
func OpenBackend(o Options, backend string) (*Worker, error) {
	o.backend = backend
	return Open(o)
}

// FakeKernel, FillAndCheck and OpenFake are fakeKernel, fillAndCheck and
// openFake.
func FakeKernel(t *testing.T, w *Worker, name string) Kernel {
	t.Helper()
	return fakeKernel(t, w, name)
}
func FillAndCheck(t *testing.T, w *Worker, fill Kernel, v float32) {
	t.Helper()
	fillAndCheck(t, w, fill, v)
}
func OpenFake(t *testing.T, timeout time.Duration) *Worker { t.Helper(); return openFake(t, timeout) }

// Echo is the library request echo.
type Echo = echo

// PipePiece is pipePiece.
const PipePiece = pipePiece

// CommandPID is the process id of the current worker's command: the
// worker, or the command that carries a remote worker's pipe.
func (w *Worker) CommandPID() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p.cmd.Process.Pid
}

// SetTimeout changes the time limit of the Worker's calls.
func (w *Worker) SetTimeout(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opts.Timeout = d
}

// CloseForTest closes the Worker and says whether its worker process had
// exited by then, and how it ended.
func (w *Worker) CloseForTest() (exited bool, cause string, err error) {
	w.mu.Lock()
	p := w.p
	w.mu.Unlock()
	err = w.Close()
	select {
	case <-p.exited:
		exited = true
	default:
	}
	return exited, p.exitCause(), err
}
