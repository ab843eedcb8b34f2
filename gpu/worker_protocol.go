package gpu

import (
	"errors"
	"fmt"

	"cudarepl/nvrtc"
)

// The worker protocol: the parent writes calls as gob values to the worker's
// fd 3 and reads replies from its fd 4, one reply per call, each possibly
// preceded by progress replies. The worker's first reply, before any call,
// is its hello: the device it opened or why it could not. Calls, ops,
// library requests and answers travel inside interface values, so every
// type of them is registered with gob (registerType, RegisterLibrary).
// A remote worker's host ("cudarepl worker", package gpu/remote) runs the
// same worker as its child and carries the same two streams over its
// stdin and stdout, in frames, after a hello line that names
// WorkerProtocol; a Transport (transport.go) is what the Worker sees of it.

// call is one request to the worker, as a value of its own type: it
// serves itself against the Device the worker opened. progress, where the
// call has any, reports how far it got; the parent's time limit starts
// again at each report.
type call interface {
	serve(dev Device, progress func(done, total int)) (any, error)
}

// reply answers a call. Progress replies carry only Done and Total; the
// hello carries only Info, or Err.
type reply struct {
	Progress    bool
	Done, Total int

	Err   *wireError
	Info  DeviceInfo
	Value any  // what the call's serve returned
	Ends  bool // the worker exits after this reply: it could not read the call
}

// answer is v as a T, with err: the zero T where the call failed, or
// where the answer is of another type (a call and its client that
// disagree, which the tests of each call catch).
func answer[T any](v any, err error) (T, error) {
	t, ok := v.(T)
	if err == nil && !ok && v != nil {
		err = fmt.Errorf("gpu: the worker answered with a %T where a %T was expected", v, t)
	}
	return t, err
}

// wireError carries an error across the pipe, keeping the typed error
// inside it so that errors.As still works in the parent.
type wireError struct {
	Msg         string
	CUDA        *CUDAError
	Compile     *nvrtc.CompileError
	Unavailable *UnavailableError
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	var ce *CUDAError
	var cpe *nvrtc.CompileError
	var ue *UnavailableError
	switch {
	case errors.As(err, &ce):
		w.CUDA = ce
	case errors.As(err, &cpe):
		w.Compile = cpe
	case errors.As(err, &ue):
		w.Unavailable = &UnavailableError{Reason: ue.Reason} // Err may not encode
	}
	return w
}

// remoteError is an error rebuilt from the worker's reply.
type remoteError struct {
	msg   string
	inner error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.inner }

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	var inner error
	switch {
	case w.CUDA != nil:
		inner = w.CUDA
	case w.Compile != nil:
		inner = w.Compile
	case w.Unavailable != nil:
		inner = w.Unavailable
	}
	if inner != nil && inner.Error() == w.Msg {
		return inner
	}
	return &remoteError{msg: w.Msg, inner: inner}
}

// isSticky reports whether err is a fault that ruined the worker's context.
func isSticky(err error) bool {
	var ce *CUDAError
	return errors.As(err, &ce) && ce.Sticky()
}
