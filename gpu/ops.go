package gpu

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Op is one piece of device work that Run, Capture, Timeline, Bench and
// RunMulti enqueue. This package has Launch, Copy, Memset, GraphOp,
// OnStream, Record, WaitFor, the cross-GPU PeerCopy and WaitPeer, and the
// host-side Sync, AllocSlot and FreeSlot; a library package adds its own
// (a cuBLAS product, a cuDNN graph) by implementing Op and registering the
// type with RegisterLibrary, so that it can cross to the worker.
type Op interface {
	// Name names the op in messages and timelines, e.g. "vadd_v1".
	Name() string
	// Prepare makes the op ready to enqueue on the GPU thread of x's
	// context: everything that can fail or allocate happens here, so that
	// enqueueing the Step, as often as a measurement asks, does neither.
	Prepare(x *Exec) (Step, error)
}

// Step is an Op made ready by Prepare.
type Step struct {
	// Enqueue puts the op's work on the context's current stream. It may
	// be called many times (Bench), or once while a graph is captured.
	Enqueue func() error
	// Release frees what Prepare made, once nothing can call Enqueue any
	// more; nil when there is nothing to free.
	Release func()
	// Uses lists device memory the op reads or writes (any address inside
	// an allocation from Alloc), so that a graph that captured it is
	// refused once that memory is freed.
	Uses []DevicePtr
	// NoCapture, if set, says why the op cannot be captured into a graph,
	// e.g. "synchronize cannot be captured into a graph here".
	NoCapture string
}

// notCapturable is the NoCapture of an op that no graph can hold.
func notCapturable(name string) string { return name + " cannot be captured into a graph here" }

// Copy moves Bytes between host memory from AllocHost and device memory, or
// within device memory (cuMemcpy*Async_v2).
type Copy struct {
	Kind     CopyKind
	Dst, Src uint64 // a DevicePtr or a HostPtr, as Kind says
	Bytes    int64
}

// CopyKind is the direction of a Copy.
type CopyKind int

// The copy directions.
const (
	HostToDevice CopyKind = iota + 1
	DeviceToHost
	DeviceToDevice
)

func (k CopyKind) String() string {
	switch k {
	case HostToDevice:
		return "host→device"
	case DeviceToHost:
		return "device→host"
	case DeviceToDevice:
		return "device→device"
	}
	return fmt.Sprintf("CopyKind(%d)", int(k))
}

// Name is "copy" and the direction.
func (c Copy) Name() string { return "copy " + c.Kind.String() }

// Prepare checks the direction.
func (c Copy) Prepare(x *Exec) (Step, error) {
	d, detail := x.c.d, fmt.Sprintf("%d bytes", c.Bytes)
	switch c.Kind {
	case HostToDevice:
		return Step{Uses: []DevicePtr{DevicePtr(c.Dst)}, Enqueue: func() error {
			return d.check(d.cuMemcpyHtoDAsync(c.Dst, uintptr(c.Src), uint64(c.Bytes), x.c.stream), "cuMemcpyHtoDAsync_v2", detail)
		}}, nil
	case DeviceToHost:
		return Step{Uses: []DevicePtr{DevicePtr(c.Src)}, Enqueue: func() error {
			return d.check(d.cuMemcpyDtoHAsync(uintptr(c.Dst), c.Src, uint64(c.Bytes), x.c.stream), "cuMemcpyDtoHAsync_v2", detail)
		}}, nil
	case DeviceToDevice:
		return Step{Uses: []DevicePtr{DevicePtr(c.Dst), DevicePtr(c.Src)}, Enqueue: func() error {
			return d.check(d.cuMemcpyDtoDAsync(c.Dst, c.Src, uint64(c.Bytes), x.c.stream), "cuMemcpyDtoDAsync_v2", detail)
		}}, nil
	}
	return Step{}, fmt.Errorf("gpu: copy: unknown direction %d", c.Kind)
}

// Memset fills Count 32-bit words at Dst with Value (cuMemsetD32Async).
type Memset struct {
	Dst   DevicePtr
	Value uint32
	Count int64
}

// Name is "memset".
func (m Memset) Name() string { return "memset" }

// Prepare has nothing to check.
func (m Memset) Prepare(x *Exec) (Step, error) {
	d := x.c.d
	return Step{Uses: []DevicePtr{m.Dst}, Enqueue: func() error {
		return d.check(d.cuMemsetD32Async(uint64(m.Dst), m.Value, uint64(m.Count), x.c.stream), "cuMemsetD32Async", fmt.Sprintf("%d words", m.Count))
	}}, nil
}

// GraphOp replays a captured graph (cuGraphLaunch).
type GraphOp struct{ Graph Graph }

// Name says how many ops the graph holds.
func (g GraphOp) Name() string { return fmt.Sprintf("graph of %d ops", g.Graph.Ops) }

// Prepare refuses a graph whose memory was freed after it was captured.
func (g GraphOp) Prepare(x *Exec) (Step, error) {
	c := x.c
	rec, ok := c.graphs[g.Graph.ID]
	if !ok {
		return Step{}, fmt.Errorf("gpu: graph %#x is not a graph from Capture here", g.Graph.ID)
	}
	if rec.freed != 0 {
		return Step{}, fmt.Errorf("gpu: graph of %d ops: its kernels use device memory at %#x, freed after it was captured, "+
			"so it would read and write whatever lives there now; capture it again on live buffers (or Update it)", g.Graph.Ops, uint64(rec.freed))
	}
	return Step{Uses: rec.uses, Enqueue: func() error {
		return c.d.check(c.d.cuGraphLaunch(uintptr(g.Graph.ID), c.stream), "cuGraphLaunch", g.Name())
	}}, nil
}

// OnStream enqueues Op on stream Stream: 0 is the device's own stream,
// where Run, Capture and Bench enqueue and time; 1, 2, … are further
// streams, made on first use, that run concurrently with it and with each
// other. Order work across streams with Record and WaitFor; Run waits for
// the device's own stream only, so work on another stream that it does
// not wait for may still be running when Run returns.
type OnStream struct {
	Stream int
	Op     Op
}

// Name is the inner op's, on its stream.
func (s OnStream) Name() string {
	if s.Op == nil {
		return fmt.Sprintf("nothing on stream %d", s.Stream)
	}
	return fmt.Sprintf("%s on stream %d", s.Op.Name(), s.Stream)
}

// Prepare prepares the inner op, which enqueues on the context's current
// stream: its Enqueue runs with that switched to stream Stream for the
// while.
func (s OnStream) Prepare(x *Exec) (Step, error) {
	switch {
	case s.Stream < 0:
		return Step{}, fmt.Errorf("gpu: %s: streams are numbered from 0", s.Name())
	case s.Op == nil:
		return Step{}, errors.New("gpu: nil op on stream")
	}
	if _, nested := s.Op.(OnStream); nested {
		return Step{}, fmt.Errorf("gpu: %s: an OnStream inside another", s.Name())
	}
	inner, err := s.Op.Prepare(x)
	if err != nil {
		return Step{}, err
	}
	c := x.c
	return Step{Uses: inner.Uses, Release: inner.Release, NoCapture: notCapturable(s.Name()),
		Enqueue: func() error {
			st, err := c.streamNumbered(s.Stream)
			if err != nil {
				return err
			}
			saved := c.stream
			c.stream = st
			defer func() { c.stream = saved }()
			return inner.Enqueue()
		}}, nil
}

// unwrapped is the op an OnStream wraps, or op itself. (Ops may hold maps,
// so they are never compared.)
func unwrapped(op Op) Op {
	inner, _ := unwrap(op)
	return inner
}

// unwrap is the op an OnStream wraps, and its stream; any other op, on
// stream 0.
func unwrap(op Op) (Op, int) {
	if s, ok := op.(OnStream); ok {
		return s.Op, s.Stream
	}
	return op, 0
}

// Record records event Event, made on first use, on the stream it is
// enqueued on (cuEventRecord): it completes when everything enqueued on
// that stream before it has.
type Record struct{ Event int }

// Name names the event.
func (r Record) Name() string { return fmt.Sprintf("record event %d", r.Event) }

// Prepare has nothing to check.
func (r Record) Prepare(x *Exec) (Step, error) {
	d := x.c.d
	return eventStep(x, r.Name(), r.Event, "cuEventRecord", func(e, s uintptr) cuResult { return d.cuEventRecord(e, s) }), nil
}

// WaitFor makes the stream it is enqueued on wait until event Event has
// completed (cuStreamWaitEvent), without blocking the host.
type WaitFor struct{ Event int }

// Name names the event.
func (w WaitFor) Name() string { return fmt.Sprintf("wait for event %d", w.Event) }

// Prepare has nothing to check.
func (w WaitFor) Prepare(x *Exec) (Step, error) {
	d := x.c.d
	return eventStep(x, w.Name(), w.Event, "cuStreamWaitEvent", func(e, s uintptr) cuResult { return d.cuStreamWaitEvent(s, e, 0) }), nil
}

// eventStep is the step of an op that calls call (the C function cname)
// with event i, made on first use, and the stream it is enqueued on. Such
// a step cannot be captured.
func eventStep(x *Exec, name string, i int, cname string, call func(e, stream uintptr) cuResult) Step {
	c := x.c
	return Step{NoCapture: notCapturable(name), Enqueue: func() error {
		e, err := c.event(i)
		if err != nil {
			return err
		}
		return c.d.check(call(e, c.stream), cname, name)
	}}
}

// Span is one op of a Timeline: when it ran on its stream, from the start
// of the timeline.
type Span struct {
	Stream     int
	Op         string
	Start, End time.Duration
}

// Sync waits on the host until everything enqueued before it has finished
// (cuStreamSynchronize): the round trip a program pays when it
// synchronises after each launch. It cannot be captured into a graph.
type Sync struct{}

// Name is "synchronize".
func (Sync) Name() string { return "synchronize" }

// Prepare has nothing to check.
func (s Sync) Prepare(x *Exec) (Step, error) {
	return Step{NoCapture: notCapturable(s.Name()), Enqueue: func() error { return x.c.sync("at a Sync op") }}, nil
}

// AllocSlot allocates Bytes of device memory into slot Slot, for launches
// that name it with SlotPtr: allocation inside a timed loop, as a training
// step that allocates its temporaries does. With Pool it takes the memory
// from the device's stream-ordered pool (cuMemAllocAsync, see MemPool),
// else from cuMemAlloc, which synchronises the device. Slots cannot be
// captured into a graph.
type AllocSlot struct {
	Slot  int
	Bytes int64
	Pool  bool
}

// Name says how much goes into which slot.
func (a AllocSlot) Name() string {
	return fmt.Sprintf("allocate %d bytes into slot %d%s", a.Bytes, a.Slot, map[bool]string{true: " from the pool"}[a.Pool])
}

// Prepare checks the size and that the driver has what Pool needs; the
// memory is allocated when the step is enqueued.
func (a AllocSlot) Prepare(x *Exec) (Step, error) {
	c := x.c
	d := c.d
	if a.Bytes <= 0 {
		return Step{}, fmt.Errorf("gpu: %s: size must be positive", a.Name())
	}
	if a.Pool && d.cuMemAllocAsync == nil {
		return Step{}, errors.New("gpu: this driver has no stream-ordered allocator (cuMemAllocAsync, CUDA 11.2 or newer)")
	}
	if err := c.admit(a.Bytes, a.Name()); err != nil { // the worker's budget, CUDAREPL_MEM_LIMIT
		return Step{}, err
	}
	return Step{NoCapture: notCapturable(a.Name()), Enqueue: func() error {
		if _, ok := c.slots[a.Slot]; ok {
			return fmt.Errorf("gpu: %s: the slot still holds memory; free it first", a.Name())
		}
		var p uint64
		var err error
		if a.Pool {
			err = d.check(d.cuMemAllocAsync(&p, uint64(a.Bytes), c.stream), "cuMemAllocAsync", a.Name())
		} else {
			err = d.check(d.cuMemAlloc(&p, uint64(a.Bytes)), "cuMemAlloc_v2", a.Name())
		}
		if err == nil {
			c.slots[a.Slot] = DevicePtr(p)
		}
		return err
	}}, nil
}

// FreeSlot frees the memory in slot Slot: cuMemFreeAsync with Pool, else
// cuMemFree.
type FreeSlot struct {
	Slot int
	Pool bool
}

// Name names the slot.
func (f FreeSlot) Name() string { return fmt.Sprintf("free slot %d", f.Slot) }

// Prepare checks that the driver has what Pool needs.
func (f FreeSlot) Prepare(x *Exec) (Step, error) {
	c := x.c
	d := c.d
	if f.Pool && d.cuMemFreeAsync == nil {
		return Step{}, errors.New("gpu: this driver has no stream-ordered allocator (cuMemFreeAsync, CUDA 11.2 or newer)")
	}
	return Step{NoCapture: notCapturable(f.Name()), Enqueue: func() error {
		p, ok := c.slots[f.Slot]
		if !ok {
			return fmt.Errorf("gpu: %s: the slot holds no memory", f.Name())
		}
		delete(c.slots, f.Slot)
		if f.Pool {
			return d.check(d.cuMemFreeAsync(uint64(p), c.stream), "cuMemFreeAsync", f.Name())
		}
		return d.check(d.cuMemFree(uint64(p)), "cuMemFree_v2", f.Name())
	}}, nil
}

// describeOps names a list of ops for an error message.
func describeOps(ops []Op) string {
	if len(ops) == 1 {
		return opName(ops[0])
	}
	names := []string{}
	seen := map[string]bool{}
	for _, op := range ops {
		if n := opName(op); !seen[n] && len(names) < 3 {
			seen[n] = true
			names = append(names, n)
		}
	}
	return fmt.Sprintf("%d ops (%s)", len(ops), strings.Join(names, ", "))
}

// opName is op's name; "nil op" for a nil one.
func opName(op Op) string {
	if op == nil {
		return "nil op"
	}
	return op.Name()
}

func init() {
	// Ops cross the pipe to the worker inside interface values.
	for _, op := range []Op{Launch{}, Copy{}, Memset{}, GraphOp{}, Sync{}, OnStream{}, Record{}, WaitFor{}, AllocSlot{}, FreeSlot{}} {
		registerType(op)
	}
}
