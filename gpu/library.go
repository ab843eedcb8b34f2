package gpu

import (
	"encoding/gob"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"
)

// A library package (cuBLAS, cuDNN) adds device work to this package the
// way database/sql drivers add databases: from its own package, which gpu
// never names. Its stream-ordered work is an Op; its other calls into the
// process that owns the context (build a plan, time its algorithms) are
// Requests, which Device.Call runs there. Both reach the GPU thread with
// an *Exec. Every type that crosses to the worker inside an interface (its
// ops, requests and their answers) is registered with RegisterLibrary, or
// with gob.Register where it rides inside another (cuDNN's graph
// operations inside a graph).

// Request is work of a library that is not stream-ordered: Device.Call
// runs Serve on the GPU thread of the context, in the worker where there is
// one, and returns its answer. The request's type, and the type of every
// answer Serve gives, must be registered with RegisterLibrary.
type Request interface {
	Serve(x *Exec) (any, error)
}

// Library describes a library package to the worker protocol.
type Library struct {
	// Name names the library in DeviceInfo.Libraries, e.g. "cuBLAS".
	Name string
	// Version, if set, reports the library's version, or why it cannot be
	// loaded; the worker asks when it opens the device.
	Version func() (string, error)
	// Types holds a value of each type of the library's that crosses the
	// pipe inside an interface: its Ops, its Requests and their answers.
	Types []any
}

var (
	librariesMu sync.Mutex
	libraries   = map[string]Library{}
)

// RegisterLibrary makes lib's types known to the worker protocol (it
// registers them with encoding/gob) and its version to DeviceInfo. A
// library package calls it from its init; a program whose worker must run
// the library's work imports the library (package worker imports every
// one). It panics if the name is taken.
func RegisterLibrary(lib Library) {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	if _, dup := libraries[lib.Name]; dup {
		panic("gpu: library " + lib.Name + " registered twice")
	}
	libraries[lib.Name] = lib
	for _, t := range lib.Types {
		registerType(t)
	}
}

// registerType lets values of v's type cross the pipe inside interfaces.
func registerType(v any) { gob.Register(v) }

// LibraryVersion is a registered library's version, or why it cannot be
// loaded here.
type LibraryVersion struct {
	Name    string
	Version string // "" when Err is set
	Err     error
}

// LibraryVersions reports the registered libraries that have a version, in
// the order of their names, loading each to ask; with names, only those.
func LibraryVersions(names ...string) []LibraryVersion {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	var out []LibraryVersion
	for name, lib := range libraries {
		if lib.Version != nil && (len(names) == 0 || slices.Contains(names, name)) {
			v, err := lib.Version()
			out = append(out, LibraryVersion{Name: name, Version: v, Err: err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Libraries lists the names of the registered libraries that have a
// version, sorted.
func Libraries() []string {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	var out []string
	for name, lib := range libraries {
		if lib.Version != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// installedVersions is the version of every registered library that loads
// here, by name, for DeviceInfo.Libraries; nil when none does.
func installedVersions() map[string]string {
	var out map[string]string
	for _, v := range LibraryVersions() {
		if v.Err == nil {
			if out == nil {
				out = map[string]string{}
			}
			out[v.Name] = v.Version
		}
	}
	return out
}

// Exec is what an Op's Prepare, and the Step it returns, and a Request's
// Serve see of the context they run in: its stream, scratch memory,
// timing, and state a library keeps for the context's life. Everything
// runs on the context's GPU thread; an Exec is valid only there (or, for
// one from Peer, on GPU 0's thread during the call that made it).
type Exec struct {
	c    *Context
	home *Context // the context on whose GPU thread x runs, where not c's (Peer)
}

// Stream is the context's current CUstream: the device's own stream, or
// the one an OnStream enqueues on while its Step runs.
func (x *Exec) Stream() uintptr { return x.c.stream }

// Info describes the GPU.
func (x *Exec) Info() DeviceInfo { return x.c.info }

// Sync waits for the stream (cuStreamSynchronize); detail says why, for
// the error.
func (x *Exec) Sync(detail string) error { return x.c.sync(detail) }

// Alloc allocates device memory for the library's own use, such as a
// workspace (cuMemAlloc_v2). A step that uses it lists it in its Uses, as
// any memory: a graph that captured the step is refused once it is freed.
func (x *Exec) Alloc(bytes int64, what string) (DevicePtr, error) {
	if err := x.c.admit(bytes, what); err != nil { // the worker's budget, CUDAREPL_MEM_LIMIT
		return 0, err
	}
	var p uint64
	if err := x.c.d.check(x.c.d.cuMemAlloc(&p, uint64(bytes)), "cuMemAlloc_v2", fmt.Sprintf("%s of %d bytes", what, bytes)); err != nil {
		return 0, err
	}
	x.c.allocs[DevicePtr(p)] = bytes
	return DevicePtr(p), nil
}

// Free releases memory from Exec.Alloc (cuMemFree_v2).
func (x *Exec) Free(p DevicePtr) { x.c.free(p) }

// AfterCall runs f on the GPU thread once the Device call now running is
// done (its work waited for, or captured into a graph): for what an op
// prepared earlier in the same call may still use, such as a workspace
// replaced by a larger one.
func (x *Exec) AfterCall(f func()) {
	c := x.c
	if x.home != nil {
		c = x.home
	}
	c.afterCall = append(c.afterCall, f)
}

// State returns the library's state for this context under key, made by
// make on first use. If the state is an io.Closer, it is closed with the
// context, before the context's memory and stream go. As with
// context.Context's values, key should be of a type of the library's own,
// so that no two libraries can share one.
func (x *Exec) State(key any, make func() (any, error)) (any, error) {
	if s, ok := x.c.libState[key]; ok {
		return s, nil
	}
	s, err := make()
	if err != nil {
		return nil, err
	}
	x.c.libState[key] = s
	return s, nil
}

// Time runs enqueue reps times after warmup untimed runs and returns the
// device time of each timed run. The runs are enqueued back to back, an
// event between each two, and timed from the events once all are done: the
// GPU goes from one run to the next without waiting for the host, so no
// run's time includes the host's enqueueing. what names the work in errors.
func (x *Exec) Time(what string, enqueue func() error, warmup, reps int) ([]time.Duration, error) {
	c := x.c
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

// Call runs r on the GPU thread and returns its answer.
func (c *Context) Call(r Request) (any, error) {
	var out any
	err := c.do(func() error {
		var err error
		out, err = r.Serve(&Exec{c: c})
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

// libraryCall carries a Request to the worker.
type libraryCall struct{ Request Request }

func (c libraryCall) serve(dev Device, _ func(int, int)) (any, error) { return dev.Call(c.Request) }

// Call runs r in the worker and returns its answer.
func (w *Worker) Call(r Request) (any, error) {
	name := fmt.Sprintf("%T", r)
	if s, ok := r.(fmt.Stringer); ok {
		name = s.String()
	}
	return w.doOps("call "+name, libraryCall{r}, nil)
}

func init() { registerType(libraryCall{}) }
