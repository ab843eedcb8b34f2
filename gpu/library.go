package gpu

import (
	"encoding/gob"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Library is work done through a vendor library in the process that owns
// the CUDA context, where its handles must live: cuDNN graphs run this way.
// Libraries register with registerLibrary from package-level variable
// initializers in gpu itself: a worker process starts serving from gpu's
// init, before any package that imports gpu has run its own init, so a
// library registered from elsewhere would not exist in the worker.
type Library interface {
	// Prepare turns the data of one LibOp into a step that enqueues work on
	// lc's stream; cleanup, if not nil, runs once the step cannot be
	// running any more. Prepare runs on the GPU thread.
	Prepare(lc *LibContext, data []byte) (run func() error, cleanup func(), err error)
	// Call answers a request that is not stream-ordered work (build a plan,
	// report what it tried), on the GPU thread.
	Call(lc *LibContext, data []byte) ([]byte, error)
}

var (
	librariesMu sync.Mutex
	libraries   = map[string]Library{}
)

// registerLibrary makes lib available under name to LibOp and CallLibrary.
// It panics if the name is taken; it returns true, for use in var blocks.
func registerLibrary(name string, lib Library) bool {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	if _, dup := libraries[name]; dup {
		panic("gpu: library " + name + " registered twice")
	}
	libraries[name] = lib
	return true
}

func lookupLibrary(name string) (Library, error) {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	lib, ok := libraries[name]
	if !ok {
		var have []string
		for n := range libraries {
			have = append(have, n)
		}
		sort.Strings(have)
		return nil, fmt.Errorf("gpu: no library %q registered (have %s)", name, strings.Join(have, ", "))
	}
	return lib, nil
}

// LibOp is stream-ordered work of a registered Library, e.g. executing a
// cuDNN plan. Data is the library's own encoding of what to do.
type LibOp struct {
	Lib  string // the registered name
	What string // for messages, e.g. "cudnn graph conv+bias+relu"
	Data []byte
}

func (op LibOp) opName() string { return op.What }

func init() { gob.Register(LibOp{}) }

// LibContext is what a Library sees of the context: its stream, timing,
// and state kept for the context's life. Valid only during the
// Prepare or Call it is passed to.
type LibContext struct {
	c   *Context
	lib string
}

// Stream is the context's CUstream, on which all work is ordered.
func (lc *LibContext) Stream() uintptr { return lc.c.stream }

// State returns the library's state for this context, made by make on first
// use. If the state is an io.Closer, it is closed with the context.
func (lc *LibContext) State(make func() (any, error)) (any, error) {
	if s, ok := lc.c.libState[lc.lib]; ok {
		return s, nil
	}
	s, err := make()
	if err != nil {
		return nil, err
	}
	lc.c.libState[lc.lib] = s
	return s, nil
}

// Time is Context.timeRuns for the library's work.
func (lc *LibContext) Time(enqueue func() error, warmup, reps int) ([]time.Duration, error) {
	return lc.c.timeRuns(lc.lib, enqueue, warmup, reps)
}

// timeRuns runs enqueue reps times after warmup untimed runs and returns the
// device time of each timed run, on the GPU thread. The runs are enqueued
// back to back, an event between each two, and timed from the events once
// all are done: the GPU goes from one run to the next without waiting for
// the host, so no run's time includes the host's enqueueing.
func (c *Context) timeRuns(what string, enqueue func() error, warmup, reps int) ([]time.Duration, error) {
	d, s := c.d, c.stream
	events := make([]uintptr, reps+1)
	defer func() {
		for _, e := range events {
			if e != 0 {
				d.cuEventDestroy(e)
			}
		}
	}()
	for i := range events {
		if err := d.check(d.cuEventCreate(&events[i], 0), "cuEventCreate", what); err != nil {
			return nil, err
		}
	}
	for i := 0; i < warmup; i++ {
		if err := enqueue(); err != nil {
			return nil, err
		}
	}
	d.cuEventRecord(events[0], s)
	for i := 1; i <= reps; i++ {
		if err := enqueue(); err != nil {
			return nil, err
		}
		d.cuEventRecord(events[i], s)
	}
	if err := d.check(d.cuEventSynchronize(events[reps]), "cuEventSynchronize", what); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, reps)
	for i := 1; i <= reps; i++ {
		var ms float32
		if err := d.check(d.cuEventElapsedTime(&ms, events[i-1], events[i]), "cuEventElapsedTime", what); err != nil {
			return nil, err
		}
		out = append(out, time.Duration(float64(ms)*1e6))
	}
	return out, nil
}

// prepareLib prepares a LibOp; on the GPU thread.
func (c *Context) prepareLib(op LibOp) (func() error, func(), error) {
	lib, err := lookupLibrary(op.Lib)
	if err != nil {
		return nil, nil, err
	}
	return lib.Prepare(&LibContext{c: c, lib: op.Lib}, op.Data)
}

// CallLibrary sends data to the library registered as name and returns its
// answer.
func (c *Context) CallLibrary(name string, data []byte) ([]byte, error) {
	var out []byte
	err := c.do(func() error {
		lib, err := lookupLibrary(name)
		if err != nil {
			return err
		}
		out, err = lib.Call(&LibContext{c: c, lib: name}, data)
		return err
	})
	return out, err
}

// closeLibs closes library state that can be closed; on the GPU thread.
func (c *Context) closeLibs() {
	for _, s := range c.libState {
		if cl, ok := s.(io.Closer); ok {
			cl.Close()
		}
	}
}
