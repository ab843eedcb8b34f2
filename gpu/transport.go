package gpu

import (
	"fmt"
	"io"
	"os/exec"
	"path"
	"sync"
	"time"
)

// WorkerProtocol is the version of the worker protocol: the calls' types,
// the setup and the framing a Transport adds. A client refuses a remote
// worker that speaks another. Change it whenever a call, an op, a reply
// or the framing changes in a way an older worker cannot read: 2 added
// several GPUs in one worker (onDevice, multiCall, deviceInfoCall).
const WorkerProtocol = 2

// Transport starts workers that are not children of this process: on
// another host, through a command whose standard input and output carry
// the worker's pipe (package gpu/remote: ssh, or any such command). It is
// the seam beside Wrapper: the Worker writes its calls and reads its
// replies as it does with a child's, and asks the Link what became of a
// worker that went away.
type Transport interface {
	// Host names the other end in messages ("the connection to gpu1 was
	// lost"): the host, or the command.
	Host() string
	// Start starts one worker process there, as s says, and returns once
	// the other end carries its pipe; the worker's first reply is its
	// hello, as a child's is.
	Start(s WorkerStart) (*Conn, error)
}

// WorkerStart is what a Transport starts a worker process with.
type WorkerStart struct {
	Backend string   // what the worker serves: "gpu", or a fake the tests registered
	Wrap    *Wrapper // the wrapper to start it under, there; nil for none
	Number  int      // which worker process this is (1, 2, … in the order they start), for LogStart
	// Stderr takes what the worker prints, once it has started.
	Stderr io.Writer
	// Log takes each log file the wrapper wrote there, whole, as the
	// worker ends; Worker.WrapperLogs returns them.
	Log func(string)
}

// Conn is one worker process that a Transport started.
type Conn struct {
	Cmd     *exec.Cmd      // the command that carries the pipe, started; the Worker waits for it, and kills it
	Calls   io.WriteCloser // the worker's calls; closing them ends the worker
	Replies io.ReadCloser  // its replies
	Link    Link           // what the other end says of the worker
}

// Link is what a Transport knows of one worker's connection beyond its
// pipe: whether the other end is still heard from (it says it is there at
// least once a second), how the worker there ended, and why the
// connection was lost.
type Link interface {
	// Done is closed once everything the connection carried has been read.
	Done() <-chan struct{}
	// SilentFor is how long the other end has not been heard from.
	SilentFor() time.Duration
	// Lost records why this end gave up on the connection; Why says it.
	Lost(why string)
	// Dropped reports whether the connection ended without the other end
	// saying how the worker ended, or why it could not start one.
	Dropped() bool
	// ExitCause is how the worker ended as the other end said, e.g.
	// "signal: killed", or that the connection ended without saying.
	ExitCause() string
	// Why says what was seen of a lost connection: why this end gave up,
	// or the command's last words; "" where nothing was.
	Why() string
	// NotReady says why the pipe ended before the worker's hello: the
	// other end could not start it, it exited (cause says how), or the
	// connection went.
	NotReady(cause string) error
}

var (
	remoteMu   sync.Mutex
	fromRemote func() (Transport, error)
)

// RegisterRemote sets where Open sends workers when Options.Remote is
// nil: package gpu/remote registers, from its init, the Transport that
// $CUDAREPL_REMOTE or $CUDAREPL_WORKER_CMD names, so that a program that
// imports it (package worker does) honours them.
func RegisterRemote(fromEnv func() (Transport, error)) {
	remoteMu.Lock()
	defer remoteMu.Unlock()
	fromRemote = fromEnv
}

// DefaultRemote returns the Transport that Open uses when Options.Remote
// is nil, from what RegisterRemote registered; nil, for a worker here,
// where nothing is registered or it names none.
func DefaultRemote() (Transport, error) {
	remoteMu.Lock()
	f := fromRemote
	remoteMu.Unlock()
	if f == nil {
		return nil, nil
	}
	return f()
}

// ConnectionError reports that the connection to a remote worker was
// lost during a call: the host went away, the network did, or ssh was
// killed. Unlike a WorkerError, no fresh worker has been started: the
// Worker's later calls fail at once with this error until Reconnect, so
// that a command stops at the first, and the next command connects
// again.
type ConnectionError struct {
	Host string // the Transport's Host
	Op   string // what was running, e.g. "launch vadd"
	Why  string // what was seen of it, e.g. ssh's last line; may be ""
}

func (e *ConnectionError) Error() string {
	why := ""
	if e.Why != "" {
		why = " (" + e.Why + ")"
	}
	return fmt.Sprintf("gpu: %s: the connection to %s was lost%s; the next command connects again (device memory and graphs from before are gone)", e.Op, e.Host, why)
}

// startRemote starts a worker through the Transport.
func (w *Worker) startRemote() (*proc, error) {
	c, err := w.opts.Remote.Start(WorkerStart{Backend: w.opts.backend, Wrap: w.opts.Wrap, Number: w.started, Stderr: w.opts.Stderr,
		Log: func(log string) {
			w.logsMu.Lock()
			w.remoteLogs = append(w.remoteLogs, log)
			w.logsMu.Unlock()
		}})
	if err != nil {
		return nil, err
	}
	p := newProc(c.Cmd, c.Calls, c.Replies, c.Link)
	p.host = w.opts.Remote.Host()
	return p, nil
}

// lostConnection reports whether the remote worker p's pipe ended because
// the connection did: its host sent no word of the worker ending. It
// waits (briefly) for the command to end first.
func (p *proc) lostConnection() bool {
	if p.link == nil {
		return false
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
	}
	return p.link.Dropped()
}

// why says what was seen of p's lost connection: the Link's word, or
// how the command ended.
func (p *proc) why() string {
	if why := p.link.Why(); why != "" {
		return why
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return path.Base(p.cmd.Args[0]) + " ended: " + p.waitErr.Error()
		}
	default:
	}
	return ""
}

// pipeWriter marks the errors of writes to a worker's calls, so that a
// call that could not be sent is told from one that could not be encoded.
type pipeWriter struct{ io.Writer }

func (w pipeWriter) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	if err != nil {
		err = &pipeError{err}
	}
	return n, err
}

// pipeError is a write to the worker's pipe that failed: the other end or
// the connection is gone, which no encoding error means.
type pipeError struct{ err error }

func (e *pipeError) Error() string { return e.err.Error() }
func (e *pipeError) Unwrap() error { return e.err }
