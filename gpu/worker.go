package gpu

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"cudarepl/nvrtc"
)

// DefaultTimeout is how long a Worker call may run without finishing or
// reporting progress before the worker is taken to be hung.
const DefaultTimeout = 10 * time.Second

// Options configures Open.
type Options struct {
	// Timeout is how long one call may go without finishing or reporting
	// progress; DefaultTimeout when 0. A kernel that runs longer is
	// stopped by killing the worker.
	Timeout time.Duration
	// Stderr receives what the worker prints; os.Stderr when nil.
	Stderr io.Writer
	// Wrap, if set, starts every worker process under another program:
	// compute-sanitizer, a profiler. Worker.WrapperLogs collects what it
	// wrote.
	Wrap *Wrapper

	backend string // what the worker serves; "gpu" when empty (tests use fakes)
}

// Worker is a Device whose calls run in a child process: the running
// executable started again as a worker. When a call faults, passes the time
// limit or kills the worker, the call returns a *WorkerError and a fresh
// worker is started; kernels loaded before are loaded again on their next
// use, device memory and graphs are gone.
type Worker struct {
	opts Options

	mu       sync.Mutex
	p        *proc
	info     DeviceInfo
	restarts int
	images   map[string]*nvrtc.Image // every image loaded, to reload after a restart
	loaded   map[kernelKey]bool      // kernels loaded in the current process
	owned    map[owned]bool          // memory and graphs made by the current process
	gone     map[owned]bool          // made by a process since replaced, and not yet freed
	closed   bool
	logDir   string // where the wrapper writes one log per worker process
	started  int    // worker processes started, for LogStart
}

// proc is one running worker process.
type proc struct {
	cmd     *exec.Cmd
	calls   io.WriteCloser
	enc     *gob.Encoder
	bw      *bufio.Writer
	replies chan reply // closed when the worker's pipe ends
	exited  chan struct{}
	waitErr error // set before exited closes
}

// Open starts a worker process for GPU 0 and returns it once the worker has
// opened the device. Without a driver or a GPU it returns the worker's one-
// sentence *UnavailableError, which wraps ErrNoGPU.
func Open(opts ...Options) (*Worker, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.backend == "" {
		o.backend = "gpu"
	}
	if !serves.Load() {
		return nil, fmt.Errorf("gpu: this program cannot start itself as a GPU worker: its main package must import cudarepl/worker " +
			"(a test of a package below it calls gpu.ServeWorker from TestMain)")
	}
	w := &Worker{opts: o, images: map[string]*nvrtc.Image{}, loaded: map[kernelKey]bool{}, owned: map[owned]bool{}, gone: map[owned]bool{}}
	if o.Wrap != nil {
		if o.Wrap.Slowdown > 1 {
			w.opts.Timeout = max(time.Duration(o.Wrap.Slowdown)*o.Timeout, 2*time.Minute)
		}
		dir, err := os.MkdirTemp("", "cudarepl-wrapper-")
		if err != nil {
			return nil, fmt.Errorf("gpu: %s's log folder: %w", o.Wrap.Name, err)
		}
		w.logDir = dir
	}
	p, info, err := w.start()
	if err != nil {
		w.removeLogDir()
		return nil, err
	}
	w.p, w.info = p, info
	return w, nil
}

// helloTimeout bounds a worker's start: loading the driver and cuInit.
const helloTimeout = 60 * time.Second

// start runs a new worker process and reads its hello.
func (w *Worker) start() (*proc, DeviceInfo, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, DeviceInfo{}, fmt.Errorf("gpu: start worker: %w", err)
	}
	callsR, callsW, err := os.Pipe()
	if err != nil {
		return nil, DeviceInfo{}, fmt.Errorf("gpu: start worker: %w", err)
	}
	repliesR, repliesW, err := os.Pipe()
	if err != nil {
		callsR.Close()
		callsW.Close()
		return nil, DeviceInfo{}, fmt.Errorf("gpu: start worker: %w", err)
	}
	argv := []string{exe}
	w.started++
	if wr := w.opts.Wrap; wr != nil {
		argv = append(slices.Clone(wr.Argv), exe)
		for i, a := range argv {
			a = strings.ReplaceAll(a, LogDir, w.logDir)
			argv[i] = strings.ReplaceAll(a, LogStart, fmt.Sprintf("%03d", w.started))
		}
		if _, err := exec.LookPath(argv[0]); err != nil {
			callsR.Close()
			callsW.Close()
			repliesR.Close()
			repliesW.Close()
			return nil, DeviceInfo{}, fmt.Errorf("gpu: start the worker under %s: %w", wr.Name, err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), workerEnv+"="+w.opts.backend)
	cmd.ExtraFiles = []*os.File{callsR, repliesW} // fd 3, fd 4
	cmd.Stdout, cmd.Stderr = w.opts.Stderr, w.opts.Stderr
	cmd.SysProcAttr = workerSysProcAttr()
	err = cmd.Start()
	callsR.Close()
	repliesW.Close()
	if err != nil {
		callsW.Close()
		repliesR.Close()
		return nil, DeviceInfo{}, fmt.Errorf("gpu: start worker %s: %w", exe, err)
	}
	bw := bufio.NewWriter(callsW)
	p := &proc{cmd: cmd, calls: callsW, bw: bw, enc: gob.NewEncoder(bw),
		replies: make(chan reply, 16), exited: make(chan struct{})}
	go func() {
		dec := gob.NewDecoder(bufio.NewReader(repliesR))
		for {
			var r reply
			if err := dec.Decode(&r); err != nil {
				break
			}
			p.replies <- r
		}
		close(p.replies)
		repliesR.Close()
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()

	select {
	case r, ok := <-p.replies:
		if !ok {
			p.kill()
			return nil, DeviceInfo{}, fmt.Errorf("gpu: worker exited before it was ready (%s)", p.exitCause())
		}
		if err := r.Err.err(); err != nil {
			p.stop()
			return nil, DeviceInfo{}, err
		}
		return p, r.Info, nil
	case <-time.After(helloTimeout):
		p.kill()
		return nil, DeviceInfo{}, fmt.Errorf("gpu: worker did not open the device within %s", helloTimeout)
	}
}

// kill ends the process and waits (briefly) for it to be reaped.
func (p *proc) kill() {
	p.calls.Close()
	killTree(p.cmd.Process)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		// A process stuck in the driver is reaped in the background.
	}
}

// stop asks the worker to finish by closing its calls pipe, then kills it
// if it does not exit soon.
func (p *proc) stop() { p.stopWithin(5 * time.Second) }

// stopWithin is stop, waiting up to d: a wrapper writes its report as
// its worker exits.
func (p *proc) stopWithin(d time.Duration) {
	p.calls.Close()
	select {
	case <-p.exited:
	case <-time.After(d):
		p.kill()
	}
}

// exitCause describes how the worker ended, e.g. "signal: killed".
func (p *proc) exitCause() string {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
		return "still running"
	}
	if p.waitErr == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return ee.ProcessState.String()
	}
	return p.waitErr.Error()
}

// Info describes the GPU.
func (w *Worker) Info() DeviceInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.info
}

// Restarts returns how many times a fresh worker has been started.
func (w *Worker) Restarts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restarts
}

// Close stops the worker.
func (w *Worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.p != nil {
		w.p.stop()
		w.p = nil
	}
	w.removeLogDir()
	return nil
}

func (w *Worker) removeLogDir() {
	if w.logDir != "" {
		os.RemoveAll(w.logDir)
	}
}

// owned names something the worker process made: device memory, host
// memory or a graph, which die with it.
type owned struct {
	kind string // "device", "host" or "graph"
	id   uint64
}

// own records that the current process made id; with w.mu held.
func (w *Worker) own(kind string, id uint64) { w.owned[owned{kind, id}] = true }

// stale reports whether id was made by a worker process since replaced,
// and forgets it; with w.mu held. Freeing what a worker that is gone made
// must not reach the fresh one, where the same address may belong to
// something else.
func (w *Worker) stale(kind string, id uint64) bool {
	k := owned{kind, id}
	delete(w.owned, k)
	if w.gone[k] {
		delete(w.gone, k)
		return true
	}
	return false
}

// forget drops what the current process made, when it is gone; with w.mu
// held.
func (w *Worker) forget() {
	w.loaded = map[kernelKey]bool{}
	for k := range w.owned {
		w.gone[k] = true
	}
	w.owned = map[owned]bool{}
}

// restart replaces a failed worker; with w.mu held.
func (w *Worker) restart() error {
	w.p = nil
	w.forget()
	p, info, err := w.start()
	if err != nil {
		return err
	}
	w.p, w.info = p, info
	w.restarts++
	return nil
}

// call sends c and waits for its answer; with w.mu held. op names the
// work for error messages. Progress replies reset the time limit.
func (w *Worker) call(op string, c call, progress func(done, total int)) (any, error) {
	if err := w.ready(op); err != nil {
		return nil, err
	}
	p := w.p
	err := p.enc.Encode(&c)
	if err == nil {
		err = p.bw.Flush()
	}
	if err != nil {
		// The worker is gone, or the call cannot be encoded; either way the
		// stream is unusable, so start afresh rather than wait for a reply.
		return nil, w.failed(op, "could not be sent to the worker ("+err.Error()+")", nil)
	}
	timer := time.NewTimer(w.opts.Timeout)
	defer timer.Stop()
	for {
		select {
		case r, ok := <-p.replies:
			if !ok {
				return nil, w.failed(op, "killed the worker ("+p.exitCause()+")", nil)
			}
			if r.Progress {
				if progress != nil {
					progress(r.Done, r.Total)
				}
				timer.Reset(w.opts.Timeout)
				continue
			}
			err := r.Err.err()
			switch {
			case isSticky(err):
				return r.Value, w.failed(op, "faulted", err)
			case r.Ends:
				return nil, w.failed(op, "could not be read by the worker", err)
			}
			return r.Value, err
		case <-timer.C:
			err := w.failed(op, fmt.Sprintf("ran past the %s time limit", w.opts.Timeout), nil)
			var we *WorkerError
			if errors.As(err, &we) {
				we.TimedOut = true
			}
			return nil, err
		}
	}
}

// ready makes sure a worker is running, starting a fresh one if the last
// one failed; with w.mu held.
func (w *Worker) ready(op string) error {
	if w.closed {
		return errors.New("gpu: device is closed")
	}
	if w.p == nil {
		if err := w.restart(); err != nil {
			return fmt.Errorf("gpu: %s: no worker: %w", op, err)
		}
	}
	return nil
}

// do makes one call with w.mu held.
func (w *Worker) do(op string, c call) (any, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.call(op, c, nil)
}

// doOwning makes a call that allocates, and records what it made (a
// DevicePtr or HostPtr) as kind, before another call can replace the
// worker.
func (w *Worker) doOwning(kind, op string, c call) (any, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, err := w.call(op, c, nil)
	if err == nil {
		switch p := v.(type) {
		case DevicePtr:
			w.own(kind, uint64(p))
		case HostPtr:
			w.own(kind, uint64(p))
		}
	}
	return v, err
}

// doFreeing makes a call that frees id, unless a worker since replaced
// made it: then it went with that worker.
func (w *Worker) doFreeing(kind string, id uint64, op string, c call) (any, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale(kind, id) {
		return nil, nil
	}
	return w.call(op, c, nil)
}

// doOps makes a call that enqueues ops, loading their kernels first if
// this worker has not seen them.
func (w *Worker) doOps(op string, c call, progress func(done, total int), ops ...Op) (any, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opsLocked(op, c, progress, ops...)
}

// opsLocked is doOps with w.mu held, for a call that must record what it
// made before another call can replace the worker.
func (w *Worker) opsLocked(op string, c call, progress func(done, total int), ops ...Op) (any, error) {
	if err := w.ready(op); err != nil {
		return nil, err
	}
	if err := w.ensureLoaded(ops); err != nil {
		return nil, err
	}
	return w.call(op, c, progress)
}

// failed kills the worker that op broke, starts a fresh one and returns the
// error to give the caller; with w.mu held.
func (w *Worker) failed(op, cause string, err error) error {
	// After a fault the worker exits by itself, and a wrapper around it
	// writes its report on the way out; a worker past its time limit is
	// killed.
	switch {
	case err != nil && w.opts.Wrap != nil:
		w.p.stopWithin(30 * time.Second)
	case err != nil:
		w.p.stop()
	default:
		w.p.kill()
	}
	if err != nil {
		var ce *CUDAError
		if errors.As(err, &ce) {
			cause += ": " + ce.Name
		} else {
			cause += ": " + err.Error()
		}
	}
	werr := &WorkerError{Op: op, Cause: cause, Err: err}
	if rerr := w.restart(); rerr != nil {
		return fmt.Errorf("%w; restarting it failed: %v", werr, rerr)
	}
	return werr
}
