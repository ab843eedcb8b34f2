package gpu

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"cudarepl/internal/sysproc"
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
	// Remote, if set, runs every worker process elsewhere, through a
	// command whose stdin and stdout are its pipe (package gpu/remote);
	// when nil, where $CUDAREPL_WORKER_CMD or $CUDAREPL_REMOTE say
	// (DefaultRemote), else here. A Wrapper then runs there too.
	Remote Transport

	backend string // what the worker serves; "gpu" when empty (tests use fakes)
}

// Worker is a Device whose calls run in a child process: the running
// executable started again as a worker, here or, with Options.Remote, on
// another host (where its kernels also compile: Compile). When a call
// faults, passes the time limit or kills the worker, the call returns a
// *WorkerError and a fresh worker is started; kernels loaded before are
// loaded again on their next use, device memory and graphs are gone. A
// remote worker whose connection is lost returns a *ConnectionError
// instead, and connects again after Reconnect.
type Worker struct {
	*workerState
	ordinal int        // the GPU of the worker process its calls run on: 0, or i for a view from On
	gpuInfo DeviceInfo // GPU ordinal's description, for a view
}

// workerState is a worker process and what it made, which a Worker shares
// with its views of the process's other GPUs (On).
type workerState struct {
	opts Options

	mu       sync.Mutex
	p        *proc
	info     DeviceInfo
	restarts int
	images   map[string]*nvrtc.Image // every image loaded, to reload after a restart
	loaded   map[loadedKernel]bool   // kernels loaded in the current process, on their GPU
	owned    map[owned]bool          // memory and graphs made by the current process
	gone     map[owned]bool          // made by a process since replaced, and not yet freed
	closed   bool
	logDir   string // where the wrapper writes one log per worker process
	started  int    // worker processes started, for LogStart
	lost     error  // a remote worker's connection was lost: calls fail with it until Reconnect

	logsMu     sync.Mutex
	remoteLogs []string // what wrappers around remote workers wrote, as their hosts sent it
}

// proc is one running worker process.
type proc struct {
	cmd     *exec.Cmd
	calls   io.WriteCloser
	enc     *gob.Encoder
	bw      *bufio.Writer
	replies chan reply // closed when the worker's pipe ends
	exited  chan struct{}
	waitErr error  // set before exited closes
	link    Link   // the connection to a worker elsewhere; nil for a child of this process
	host    string // where a worker elsewhere runs, for messages
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
	if o.Remote == nil {
		r, err := DefaultRemote()
		if err != nil {
			return nil, err
		}
		o.Remote = r
	}
	if o.Remote == nil && !serves.Load() {
		return nil, fmt.Errorf("gpu: this program cannot start itself as a GPU worker: its main package must import cudarepl/worker " +
			"(a test of a package below it calls gpu.ServeWorker from TestMain)")
	}
	w := &Worker{workerState: &workerState{opts: o, images: map[string]*nvrtc.Image{}, loaded: map[loadedKernel]bool{}, owned: map[owned]bool{}, gone: map[owned]bool{}}}
	if o.Wrap != nil && o.Wrap.Slowdown > 1 {
		w.opts.Timeout = max(time.Duration(o.Wrap.Slowdown)*o.Timeout, 2*time.Minute)
	}
	if o.Wrap != nil && o.Remote == nil { // a remote worker's host keeps its logs, and sends them
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

// start runs a new worker process, here or where the Remote says, and
// reads its hello.
func (w *Worker) start() (*proc, DeviceInfo, error) {
	w.started++
	var p *proc
	var err error
	if w.opts.Remote != nil {
		p, err = w.startRemote()
	} else {
		p, err = w.startLocal()
	}
	if err != nil {
		return nil, DeviceInfo{}, err
	}
	select {
	case r, ok := <-p.replies:
		if !ok {
			p.kill()
			return nil, DeviceInfo{}, p.endedBeforeHello()
		}
		if err := r.Err.err(); err != nil {
			p.stop()
			return nil, DeviceInfo{}, p.where(err)
		}
		return p, r.Info, nil
	case <-time.After(helloTimeout):
		p.kill()
		return nil, DeviceInfo{}, fmt.Errorf("gpu: worker did not open the device within %s", helloTimeout)
	}
}

// startLocal starts the running executable again as a worker, its pipes
// on fds 3 and 4, under the Wrapper if there is one.
func (w *Worker) startLocal() (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("gpu: start worker: %w", err)
	}
	argv := []string{exe}
	if wr := w.opts.Wrap; wr != nil {
		argv = wr.Command(exe, w.logDir, w.started)
		if _, err := exec.LookPath(argv[0]); err != nil {
			return nil, fmt.Errorf("gpu: start the worker under %s: %w", wr.Name, err)
		}
	}
	cmd, calls, replies, err := sysproc.Spawn(argv, append([]string{sysproc.WorkerEnv + "=" + w.opts.backend}, childEnv...), w.opts.Stderr)
	if err != nil {
		return nil, err
	}
	return newProc(cmd, calls, replies, nil), nil
}

// newProc is the worker process cmd, started, to which calls are written
// and from which replies are read; link is its connection, for a worker
// elsewhere.
func newProc(cmd *exec.Cmd, calls io.WriteCloser, replies io.ReadCloser, link Link) *proc {
	bw := bufio.NewWriter(pipeWriter{calls})
	p := &proc{cmd: cmd, calls: calls, bw: bw, enc: gob.NewEncoder(bw),
		replies: make(chan reply, 16), exited: make(chan struct{}), link: link}
	go func() {
		dec := gob.NewDecoder(bufio.NewReader(replies))
		for {
			var r reply
			if err := dec.Decode(&r); err != nil {
				break
			}
			p.replies <- r
		}
		close(p.replies)
		replies.Close()
	}()
	go func() {
		p.waitErr = cmd.Wait()
		if link != nil {
			<-link.Done() // what the connection carried is all read
		}
		close(p.exited)
	}()
	return p
}

// endedBeforeHello says why a worker's pipe ended before its hello.
func (p *proc) endedBeforeHello() error {
	if p.link != nil {
		return p.link.NotReady(p.exitCause())
	}
	return fmt.Errorf("gpu: worker exited before it was ready (%s)", p.exitCause())
}

// where is err, a worker's hello that it could not open the device,
// saying which host it speaks of where the worker is remote.
func (p *proc) where(err error) error {
	var ue *UnavailableError
	if p.link == nil || !errors.As(err, &ue) {
		return err
	}
	return &UnavailableError{Reason: "on " + p.host + ", " + ue.Reason}
}

// kill ends the process and waits (briefly) for it to be reaped.
func (p *proc) kill() {
	p.calls.Close()
	sysproc.KillTree(p.cmd.Process)
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
	if p.link != nil {
		return p.link.ExitCause()
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
	if w.ordinal != 0 {
		return w.gpuInfo
	}
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

// Close stops the worker. Closing a view of another GPU (On) does
// nothing.
func (w *Worker) Close() error {
	if w.ordinal != 0 {
		return nil
	}
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
	w.loaded = map[loadedKernel]bool{}
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
	if w.ordinal != 0 {
		op, c = fmt.Sprintf("%s on GPU %d", op, w.ordinal), onDevice{w.ordinal, c}
	}
	if err := w.ready(op); err != nil {
		return nil, err
	}
	p := w.p
	err := p.enc.Encode(&c)
	if err == nil {
		err = p.bw.Flush()
	}
	if err != nil {
		if errors.As(err, new(*pipeError)) && p.lostConnection() {
			return nil, w.disconnected(op)
		}
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
				if p.lostConnection() {
					return nil, w.disconnected(op)
				}
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
			if p.link != nil && p.link.SilentFor() > 3*time.Second {
				// The host has not been heard from either (three heartbeats
				// missed): the connection, not the kernel, is what stopped.
				p.link.Lost(fmt.Sprintf("no word from it for %s", p.link.SilentFor().Truncate(time.Second)))
				return nil, w.disconnected(op)
			}
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
// one failed; with w.mu held. After a remote worker's connection was
// lost, it fails at once until Reconnect, and so does it after a remote
// worker could not be started: a command stops at its first failed call
// instead of trying to connect at each.
func (w *Worker) ready(op string) error {
	if w.closed {
		return errors.New("gpu: device is closed")
	}
	if w.p == nil {
		if w.lost != nil {
			return w.lost
		}
		if err := w.restart(); err != nil {
			err = fmt.Errorf("gpu: %s: no worker: %w", op, err)
			if w.opts.Remote != nil {
				w.lost = err
			}
			return err
		}
	}
	return nil
}

// disconnected ends the worker whose connection was lost during op and
// returns the error that says so; with w.mu held. No fresh worker is
// started: the connection may be down for a while, and the next command
// tries again (Reconnect).
func (w *Worker) disconnected(op string) error {
	p := w.p
	p.kill()
	w.p = nil
	w.forget()
	err := &ConnectionError{Host: w.opts.Remote.Host(), Op: op, Why: p.why()}
	w.lost = err
	return err
}

// Reconnect lets a Worker whose remote connection was lost, or could not
// be made, connect again at its next call. A REPL calls it before each
// command; it does nothing to a Worker that is connected.
func (w *Worker) Reconnect() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost = nil
}

// Host is where the worker runs: the Remote's Host, or "" for a worker
// that is a child of this process.
func (w *Worker) Host() string {
	if w.opts.Remote == nil {
		return ""
	}
	return w.opts.Remote.Host()
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
		err := fmt.Errorf("%w; restarting it failed: %v", werr, rerr)
		if w.opts.Remote != nil {
			w.lost = err
		}
		return err
	}
	return werr
}
