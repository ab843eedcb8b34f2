package gpu

import (
	"errors"
	"time"

	"cudarepl/nvrtc"
)

// Compile compiles src with NVRTC where the worker runs: in this process
// for a worker that is its child (the same machine, the same NVRTC), and
// in the worker for a remote one, so that kernels are compiled by the
// NVRTC beside the GPU that runs them, for its architecture, into its
// disk cache. A source that does not compile gives the *nvrtc.CompileError
// NVRTC gave there, src.Focus applied (the learner's lines); an NVRTC
// missing there gives an UnavailableError that names the host.
func (w *Worker) Compile(src nvrtc.Source, opt nvrtc.CompileOptions) (*nvrtc.Image, error) {
	if w.opts.Remote == nil {
		return nvrtc.Compile(src, opt)
	}
	img, err := answer[*nvrtc.Image](w.do("compile "+src.Name, compileCall{Src: src, Opt: opt}))
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return nil, &UnavailableError{Reason: "on " + w.opts.Remote.Host() + ", " + ue.Reason}
	}
	return img, err
}

// compileCall compiles a kernel in the worker.
type compileCall struct {
	Src nvrtc.Source
	Opt nvrtc.CompileOptions
}

// maxCompileBeats bounds how long a compile keeps the caller's time limit
// away: NVRTC takes seconds, tens for the largest kernels; one that takes
// more than this is taken to be stuck.
const maxCompileBeats = 5 * time.Minute

func (c compileCall) serve(_ Device, progress func(done, total int)) (any, error) {
	// NVRTC reports no progress and cannot be interrupted: a tick a second
	// stands for it, so that the time limit of device calls does not stop
	// a long compile.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		limit := time.After(maxCompileBeats)
		for {
			select {
			case <-t.C:
				progress(0, 1)
			case <-limit:
				return
			case <-stop:
				return
			}
		}
	}()
	img, err := nvrtc.Compile(c.Src, c.Opt)
	close(stop)
	<-stopped // no tick after the answer
	if err != nil {
		return nil, err
	}
	return img, nil
}

func init() {
	registerType(compileCall{})
	registerType(&nvrtc.Image{})
}
