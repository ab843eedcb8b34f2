package gpu

import (
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// Graph is a captured, instantiated CUDA graph (CUgraphExec).
type Graph struct {
	ID    uint64
	Ops   int           // how many ops were captured
	Built time.Duration // what capturing and instantiating (or updating) it took, in the process that owns the context
}

// PoolStats is what the device's default stream-ordered memory pool holds.
type PoolStats struct {
	Reserved int64 // bytes the pool holds from the device
	Used     int64 // of them, bytes allocated and not yet freed
}

// prepared is a list of ops made ready to enqueue.
type prepared []Step

// prepare prepares every op, so that enqueueing them allocates nothing.
// Release the result once nothing can enqueue it any more. On failure,
// what was prepared is released already.
func (c *Context) prepare(ops []Op) (prepared, error) {
	x := &Exec{c: c}
	steps := make(prepared, 0, len(ops))
	for i, op := range ops {
		if op == nil {
			steps.release()
			return nil, errors.New("gpu: nil op")
		}
		s, err := op.Prepare(x)
		if err == nil && s.Enqueue == nil {
			if s.Release != nil {
				s.Release()
			}
			err = fmt.Errorf("gpu: %s prepared no work", op.Name())
		}
		if err != nil {
			steps.release()
			if len(ops) > 1 {
				err = fmt.Errorf("op %d: %w", i, err)
			}
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// enqueue enqueues every step in order.
func (p prepared) enqueue() error {
	for _, s := range p {
		if err := s.Enqueue(); err != nil {
			return err
		}
	}
	return nil
}

// release frees what Prepare made.
func (p prepared) release() {
	for _, s := range p {
		if s.Release != nil {
			s.Release()
		}
	}
}

// Launch runs one kernel and waits for it.
func (c *Context) Launch(l Launch) error { return c.Run(l) }

// Run enqueues ops in order and waits for them.
func (c *Context) Run(ops ...Op) error {
	return c.do(func() error {
		p, err := c.prepare(ops)
		if err != nil {
			return err
		}
		defer p.release()
		if err := p.enqueue(); err != nil {
			return err
		}
		return c.sync("after " + describeOps(ops))
	})
}

// graphRec is a graph Capture made: its CUgraph, the device allocations
// its ops name, and the first of them freed since (0 while none is).
type graphRec struct {
	graph uintptr
	uses  []DevicePtr
	freed DevicePtr
}

// Capture records ops into a CUDA graph and instantiates it.
func (c *Context) Capture(ops ...Op) (Graph, error) {
	var g Graph
	err := c.do(func() error {
		t0 := time.Now()
		graph, uses, err := c.record(ops)
		if err != nil {
			return err
		}
		var exec uintptr
		if err := c.d.check(c.d.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags", describeOps(ops)); err != nil {
			c.d.cuGraphDestroy(graph)
			return err
		}
		c.graphs[uint64(exec)] = &graphRec{graph: graph, uses: uses}
		g = Graph{ID: uint64(exec), Ops: len(ops), Built: time.Since(t0)}
		return nil
	})
	return g, err
}

// record captures ops from the stream into a new CUgraph, and returns it
// with the allocations its ops use. An op says it cannot be captured once
// it is prepared, so a list holding one is refused after the ops before it
// prepared (a tuned product or an autotuned cuDNN plan has then timed its
// candidates: their choice is cached for the next capture).
func (c *Context) record(ops []Op) (uintptr, []DevicePtr, error) {
	d := c.d
	p, err := c.prepare(ops)
	if err != nil {
		return 0, nil, err
	}
	defer p.release()
	for _, s := range p {
		if s.NoCapture != "" {
			return 0, nil, fmt.Errorf("gpu: capture: %s", s.NoCapture)
		}
	}
	const captureThreadLocal = 1
	if err := d.check(d.cuStreamBeginCapture(c.stream, captureThreadLocal), "cuStreamBeginCapture_v2", ""); err != nil {
		return 0, nil, err
	}
	runErr := p.enqueue()
	var graph uintptr
	endErr := d.check(d.cuStreamEndCapture(c.stream, &graph), "cuStreamEndCapture", describeOps(ops))
	if err := errors.Join(runErr, endErr); err != nil {
		if graph != 0 {
			d.cuGraphDestroy(graph)
		}
		return 0, nil, err
	}
	return graph, c.allocationsUsed(p), nil
}

// allocationsUsed lists the device allocations (from Alloc) that the
// steps use, by their start, so that freeing one marks the graph that
// uses it.
func (c *Context) allocationsUsed(p prepared) []DevicePtr {
	var out []DevicePtr
	for base, size := range c.allocs {
	steps:
		for _, s := range p {
			for _, ptr := range s.Uses {
				if ptr >= base && uint64(ptr) < uint64(base)+uint64(size) {
					out = append(out, base)
					break steps
				}
			}
		}
	}
	return out
}

// Update records ops into a new CUDA graph and updates g's instantiated
// graph to it in place (cuGraphExecUpdate): cheaper than instantiating
// again, when only the kernels' arguments or launch shapes changed. The
// ops must have g's shape: as many, of the same kinds, in the same order.
func (c *Context) Update(g Graph, ops ...Op) (Graph, error) {
	out := g
	err := c.do(func() error {
		d := c.d
		rec, ok := c.graphs[g.ID]
		if !ok {
			return fmt.Errorf("gpu: update graph %#x: not a graph from Capture here", g.ID)
		}
		if d.cuGraphExecUpdate == nil {
			return errors.New("gpu: update graph: this driver has no cuGraphExecUpdate_v2 (CUDA 12 or newer)")
		}
		t0 := time.Now()
		graph, uses, err := c.record(ops)
		if err != nil {
			return err
		}
		var info [3]uint64 // CUgraphExecUpdateResultInfo: the result, and the node that failed and its source
		if err := d.check(d.cuGraphExecUpdate(uintptr(g.ID), graph, unsafe.Pointer(&info[0])), "cuGraphExecUpdate_v2", describeOps(ops)); err != nil {
			d.cuGraphDestroy(graph)
			return fmt.Errorf("gpu: update graph of %d ops with %d ops: its shape changed (update result %d); capture a new graph: %w",
				g.Ops, len(ops), int32(info[0]), err)
		}
		d.cuGraphDestroy(rec.graph)
		c.graphs[g.ID] = &graphRec{graph: graph, uses: uses}
		out = Graph{ID: g.ID, Ops: len(ops), Built: time.Since(t0)}
		return nil
	})
	return out, err
}

// FreeGraph releases a graph from Capture.
func (c *Context) FreeGraph(g Graph) error {
	return c.do(func() error {
		rec, ok := c.graphs[g.ID]
		if !ok {
			return fmt.Errorf("gpu: free graph %#x: not a graph from Capture", g.ID)
		}
		delete(c.graphs, g.ID)
		return errors.Join(c.d.check(c.d.cuGraphExecDestroy(uintptr(g.ID)), "cuGraphExecDestroy", ""),
			c.d.check(c.d.cuGraphDestroy(rec.graph), "cuGraphDestroy", ""))
	})
}

// The default memory pool's attributes (CUmemPool_attribute).
const (
	poolReleaseThreshold   = 4
	poolReservedMemCurrent = 5
	poolUsedMemCurrent     = 7
)

// MemPool sets the release threshold of the device's default
// stream-ordered pool to keep bytes when keep ≥ 0, and reports what the
// pool holds.
func (c *Context) MemPool(keep int64) (PoolStats, error) {
	var st PoolStats
	err := c.do(func() error {
		d := c.d
		if d.cuDeviceGetDefaultMemPool == nil {
			return errors.New("gpu: memory pool: this driver has no stream-ordered allocator (CUDA 11.2 or newer)")
		}
		var pool uintptr
		if err := d.check(d.cuDeviceGetDefaultMemPool(&pool, c.dev), "cuDeviceGetDefaultMemPool", ""); err != nil {
			return err
		}
		if keep >= 0 {
			v := uint64(keep)
			if err := d.check(d.cuMemPoolSetAttribute(pool, poolReleaseThreshold, unsafe.Pointer(&v)), "cuMemPoolSetAttribute",
				fmt.Sprintf("release threshold %d bytes", keep)); err != nil {
				return err
			}
		}
		var reserved, used uint64
		if err := errors.Join(
			d.check(d.cuMemPoolGetAttribute(pool, poolReservedMemCurrent, unsafe.Pointer(&reserved)), "cuMemPoolGetAttribute", "reserved"),
			d.check(d.cuMemPoolGetAttribute(pool, poolUsedMemCurrent, unsafe.Pointer(&used)), "cuMemPoolGetAttribute", "used")); err != nil {
			return err
		}
		st = PoolStats{Reserved: int64(reserved), Used: int64(used)}
		return nil
	})
	return st, err
}

// streamNumbered is stream i: the device's own for 0, else one made on
// first use, non-blocking so that it never waits on the legacy stream.
func (c *Context) streamNumbered(i int) (uintptr, error) {
	if i == 0 {
		return c.stream, nil
	}
	if s, ok := c.streams[i]; ok {
		return s, nil
	}
	const nonBlocking = 1
	var s uintptr
	if err := c.d.check(c.d.cuStreamCreate(&s, nonBlocking), "cuStreamCreate", fmt.Sprintf("stream %d", i)); err != nil {
		return 0, err
	}
	c.streams[i] = s
	return s, nil
}

// event is event i, made on first use.
func (c *Context) event(i int) (uintptr, error) {
	if e, ok := c.events[i]; ok {
		return e, nil
	}
	var e uintptr
	if err := c.d.check(c.d.cuEventCreate(&e, 0), "cuEventCreate", fmt.Sprintf("event %d", i)); err != nil {
		return 0, err
	}
	c.events[i] = e
	return e, nil
}

// Timeline runs ops once with a timing event recorded before and after
// each, on its stream, waits for every stream, and returns when each op
// ran: what a profiler's timeline shows, one row a stream.
func (c *Context) Timeline(ops ...Op) ([]Span, error) {
	var spans []Span
	err := c.do(func() error {
		d := c.d
		p, err := c.prepare(ops)
		if err != nil {
			return err
		}
		defer p.release()
		evs := make([]uintptr, 2*len(ops)+1)
		for i := range evs {
			if err := d.check(d.cuEventCreate(&evs[i], 0), "cuEventCreate", "timeline"); err != nil {
				for _, e := range evs[:i] {
					d.cuEventDestroy(e)
				}
				return err
			}
		}
		defer func() {
			for _, e := range evs {
				d.cuEventDestroy(e)
			}
		}()
		if err := d.check(d.cuEventRecord(evs[0], c.stream), "cuEventRecord", "timeline start"); err != nil {
			return err
		}
		used := map[int]bool{0: true}
		for i, op := range ops {
			_, n := unwrap(op)
			s, err := c.streamNumbered(n)
			if err != nil {
				return err
			}
			used[n] = true
			if err := d.check(d.cuEventRecord(evs[2*i+1], s), "cuEventRecord", op.Name()); err != nil {
				return err
			}
			if err := p[i].Enqueue(); err != nil {
				return err
			}
			if err := d.check(d.cuEventRecord(evs[2*i+2], s), "cuEventRecord", op.Name()); err != nil {
				return err
			}
		}
		for n := range used {
			s, _ := c.streamNumbered(n)
			if err := d.check(d.cuStreamSynchronize(s), "cuStreamSynchronize", fmt.Sprintf("stream %d, after the timeline", n)); err != nil {
				return err
			}
		}
		at := func(e uintptr) (time.Duration, error) {
			var ms float32
			err := d.check(d.cuEventElapsedTime(&ms, evs[0], e), "cuEventElapsedTime", "timeline")
			return time.Duration(float64(ms) * 1e6), err
		}
		for i, op := range ops {
			inner, n := unwrap(op)
			start, err1 := at(evs[2*i+1])
			end, err2 := at(evs[2*i+2])
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			spans = append(spans, Span{Stream: n, Op: inner.Name(), Start: start, End: end})
		}
		return nil
	})
	return spans, err
}

// The worker's side: each call runs itself on the worker's Device.

type runCall struct{ Ops []Op }

func (c runCall) serve(dev Device, _ func(int, int)) (any, error) { return nil, dev.Run(c.Ops...) }

type captureCall struct{ Ops []Op }

func (c captureCall) serve(dev Device, _ func(int, int)) (any, error) { return dev.Capture(c.Ops...) }

type updateCall struct {
	Graph Graph
	Ops   []Op
}

func (c updateCall) serve(dev Device, _ func(int, int)) (any, error) {
	return dev.Update(c.Graph, c.Ops...)
}

type freeGraphCall struct{ Graph Graph }

func (c freeGraphCall) serve(dev Device, _ func(int, int)) (any, error) {
	return nil, dev.FreeGraph(c.Graph)
}

type memPoolCall struct{ Keep int64 }

func (c memPoolCall) serve(dev Device, _ func(int, int)) (any, error) { return dev.MemPool(c.Keep) }

type timelineCall struct{ Ops []Op }

func (c timelineCall) serve(dev Device, _ func(int, int)) (any, error) { return dev.Timeline(c.Ops...) }

// Launch runs one kernel in the worker and waits for it.
func (w *Worker) Launch(l Launch) error {
	_, err := w.doOps("launch "+l.String(), runCall{[]Op{l}}, nil, l)
	return err
}

// Run enqueues ops in the worker and waits for them.
func (w *Worker) Run(ops ...Op) error {
	_, err := w.doOps("run "+describeOps(ops), runCall{ops}, nil, ops...)
	return err
}

// Capture records ops into a CUDA graph in the worker.
func (w *Worker) Capture(ops ...Op) (Graph, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	g, err := answer[Graph](w.opsLocked("capture "+describeOps(ops), captureCall{ops}, nil, ops...))
	if err == nil {
		w.own("graph", g.ID)
	}
	return g, err
}

// Update records ops into a new graph in the worker and updates g to it.
func (w *Worker) Update(g Graph, ops ...Op) (Graph, error) {
	out, err := answer[Graph](w.doOps("update a graph with "+describeOps(ops), updateCall{g, ops}, nil, ops...))
	if err != nil {
		return g, err
	}
	return out, nil
}

// Timeline runs ops once in the worker and returns when each ran.
func (w *Worker) Timeline(ops ...Op) ([]Span, error) {
	return answer[[]Span](w.doOps("timeline of "+describeOps(ops), timelineCall{ops}, nil, ops...))
}

// MemPool sets the default pool's release threshold in the worker and
// reports what the pool holds.
func (w *Worker) MemPool(keep int64) (PoolStats, error) {
	return answer[PoolStats](w.do("memory pool", memPoolCall{keep}))
}

// FreeGraph releases a graph from Capture; like Free, it does nothing for
// a graph of a worker since replaced.
func (w *Worker) FreeGraph(g Graph) error {
	_, err := w.doFreeing("graph", g.ID, "free graph", freeGraphCall{g})
	return err
}

func init() {
	for _, v := range []any{runCall{}, captureCall{}, updateCall{}, freeGraphCall{}, memPoolCall{}, timelineCall{},
		Graph{}, PoolStats{}, []Span{}} {
		registerType(v)
	}
}
