package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"cudarepl/nvrtc"
)

// CUfunction_attribute values, from cuda.h.
const (
	funcMaxThreadsPerBlock   = 0
	funcSharedSizeBytes      = 1
	funcConstSizeBytes       = 2
	funcLocalSizeBytes       = 3
	funcNumRegs              = 4
	funcPTXVersion           = 5
	funcBinaryVersion        = 6
	funcMaxDynamicSharedSize = 8
)

// LoadKernel loads img once and returns its kernel name.
func (c *Context) LoadKernel(img *nvrtc.Image, name string) (Kernel, error) {
	if img == nil || len(img.CUBIN) == 0 {
		return Kernel{}, errors.New("gpu: load kernel: empty image")
	}
	k := Kernel{Name: name, Image: img.Key}
	err := c.do(func() error {
		var err error
		k.Attrs, err = c.loadKernel(img, name)
		return err
	})
	return k, err
}

func (c *Context) loadKernel(img *nvrtc.Image, name string) (KernelAttrs, error) {
	d := c.d
	mod, ok := c.modules[img.Key]
	if !ok {
		var pin runtime.Pinner
		pin.Pin(&img.CUBIN[0])
		err := d.check(d.cuModuleLoadData(&mod, &img.CUBIN[0]), "cuModuleLoadData", img.Name)
		pin.Unpin()
		if err != nil {
			return KernelAttrs{}, err
		}
		c.modules[img.Key] = mod
	}
	var f uintptr
	if r := d.cuModuleGetFunction(&f, mod, img.Symbol(name)); r != 0 {
		var names []string
		for _, k := range img.Kernels {
			names = append(names, k.Name)
		}
		return KernelAttrs{}, fmt.Errorf("gpu: kernel %q not found in %s (it has: %s); declare kernels extern \"C\": %w",
			name, img.Name, strings.Join(names, ", "), d.check(r, "cuModuleGetFunction", name))
	}
	c.kernels[kernelKey{img.Key, name}] = f
	attr := func(a int32) int {
		var v int32
		d.cuFuncGetAttribute(&v, a, f)
		return int(v)
	}
	return KernelAttrs{
		MaxThreadsPerBlock: attr(funcMaxThreadsPerBlock),
		Registers:          attr(funcNumRegs),
		SharedStatic:       int64(attr(funcSharedSizeBytes)),
		Local:              int64(attr(funcLocalSizeBytes)),
		Const:              int64(attr(funcConstSizeBytes)),
		PTXVersion:         attr(funcPTXVersion),
		BinaryVersion:      attr(funcBinaryVersion),
	}, nil
}

// function returns the loaded CUfunction of k; on the GPU thread.
func (c *Context) function(k Kernel) (uintptr, error) {
	f, ok := c.kernels[kernelKey{k.Image, k.Name}]
	if !ok {
		return 0, fmt.Errorf("gpu: kernel %s is not loaded here; call LoadKernel first", k.Name)
	}
	return f, nil
}

// Occupancy returns how many blocks of k fit on one SM.
func (c *Context) Occupancy(k Kernel, block, dynShared int) (int, error) {
	var n int32
	err := c.do(func() error {
		f, err := c.function(k)
		if err != nil {
			return err
		}
		return c.d.check(c.d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, int32(block), uint64(dynShared)),
			"cuOccupancyMaxActiveBlocksPerMultiprocessor", fmt.Sprintf("%s block %d", k.Name, block))
	})
	return int(n), err
}

// Launch runs one kernel and waits for it.
func (c *Context) Launch(l Launch) error { return c.Run(l) }

// Run enqueues ops in order and waits for them.
func (c *Context) Run(ops ...Op) error {
	return c.do(func() error {
		run, done, err := c.prepare(ops)
		if err != nil {
			return err
		}
		defer done()
		if err := run(); err != nil {
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
		graph, err := c.record(ops)
		if err != nil {
			return err
		}
		var exec uintptr
		if err := c.d.check(c.d.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags", describeOps(ops)); err != nil {
			c.d.cuGraphDestroy(graph)
			return err
		}
		c.graphs[uint64(exec)] = &graphRec{graph: graph, uses: c.uses(ops)}
		g = Graph{ID: uint64(exec), Ops: len(ops), Built: time.Since(t0)}
		return nil
	})
	return g, err
}

// record captures ops from the stream into a new CUgraph.
func (c *Context) record(ops []Op) (uintptr, error) {
	d := c.d
	for _, op := range ops {
		switch op := op.(type) {
		case Sync, AllocSlot, FreeSlot, OnStream, Record, WaitFor:
			return 0, fmt.Errorf("gpu: capture: %s cannot be captured into a graph here", op.opName())
		case Launch:
			for _, a := range op.Args {
				if a.Kind == ArgSlot {
					return 0, fmt.Errorf("gpu: capture: %s takes a slot's pointer, which a graph cannot follow", op.opName())
				}
			}
		}
	}
	run, done, err := c.prepare(ops)
	if err != nil {
		return 0, err
	}
	defer done()
	const captureThreadLocal = 1
	if err := d.check(d.cuStreamBeginCapture(c.stream, captureThreadLocal), "cuStreamBeginCapture_v2", ""); err != nil {
		return 0, err
	}
	runErr := run()
	var graph uintptr
	endErr := d.check(d.cuStreamEndCapture(c.stream, &graph), "cuStreamEndCapture", describeOps(ops))
	if err := errors.Join(runErr, endErr); err != nil {
		if graph != 0 {
			d.cuGraphDestroy(graph)
		}
		return 0, err
	}
	return graph, nil
}

// uses lists the device allocations (from Alloc) that ops name, by their
// start, so that freeing one marks the graph that uses it.
func (c *Context) uses(ops []Op) []DevicePtr {
	var ptrs []uint64
	for _, op := range ops {
		op, _ := unwrap(op)
		switch op := op.(type) {
		case Launch:
			for _, a := range op.Args {
				if a.Kind == ArgPtr {
					ptrs = append(ptrs, a.Bits)
				}
			}
		case Copy:
			switch op.Kind {
			case HostToDevice:
				ptrs = append(ptrs, op.Dst)
			case DeviceToHost:
				ptrs = append(ptrs, op.Src)
			case DeviceToDevice:
				ptrs = append(ptrs, op.Dst, op.Src)
			}
		case Memset:
			ptrs = append(ptrs, uint64(op.Dst))
		case GEMM:
			ptrs = append(ptrs, uint64(op.A), uint64(op.B), uint64(op.C))
		}
	}
	var out []DevicePtr
	for base, size := range c.allocs {
		for _, p := range ptrs {
			if p >= uint64(base) && p < uint64(base)+uint64(size) {
				out = append(out, base)
				break
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
		graph, err := c.record(ops)
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
		c.graphs[g.ID] = &graphRec{graph: graph, uses: c.uses(ops)}
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

// prepare turns ops into one function that enqueues them all, with argument
// memory packed and pinned up front, so that enqueueing allocates nothing.
// done releases that memory; call it once nothing can read it any more.
func (c *Context) prepare(ops []Op) (run func() error, done func(), err error) {
	steps, done, err := c.prepareSteps(ops)
	if err != nil {
		return nil, nil, err
	}
	run = func() error {
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	}
	return run, done, nil
}

// prepareSteps is prepare with a function an op, for a caller that does
// something between them (Timeline records events).
func (c *Context) prepareSteps(ops []Op) (steps []func() error, done func(), err error) {
	steps = make([]func() error, 0, len(ops))
	var cleanups []func()
	done = func() {
		for _, f := range cleanups {
			f()
		}
	}
	for i, op := range ops {
		step, cleanup, err := c.prepareOp(op)
		if err != nil {
			done()
			if len(ops) > 1 {
				err = fmt.Errorf("op %d: %w", i, err)
			}
			return nil, nil, err
		}
		steps = append(steps, step)
		if cleanup != nil {
			cleanups = append(cleanups, cleanup)
		}
	}
	return steps, done, nil
}

func (c *Context) prepareOp(op Op) (func() error, func(), error) {
	d := c.d
	switch op := op.(type) {
	case Launch:
		return c.prepareLaunch(op)
	case Copy:
		detail := fmt.Sprintf("%d bytes", op.Bytes)
		switch op.Kind {
		case HostToDevice:
			return func() error {
				return d.check(d.cuMemcpyHtoDAsync(op.Dst, uintptr(op.Src), uint64(op.Bytes), c.stream), "cuMemcpyHtoDAsync_v2", detail)
			}, nil, nil
		case DeviceToHost:
			return func() error {
				return d.check(d.cuMemcpyDtoHAsync(uintptr(op.Dst), op.Src, uint64(op.Bytes), c.stream), "cuMemcpyDtoHAsync_v2", detail)
			}, nil, nil
		case DeviceToDevice:
			return func() error {
				return d.check(d.cuMemcpyDtoDAsync(op.Dst, op.Src, uint64(op.Bytes), c.stream), "cuMemcpyDtoDAsync_v2", detail)
			}, nil, nil
		}
		return nil, nil, fmt.Errorf("gpu: copy: unknown direction %d", op.Kind)
	case Memset:
		return func() error {
			return d.check(d.cuMemsetD32Async(uint64(op.Dst), op.Value, uint64(op.Count), c.stream), "cuMemsetD32Async", fmt.Sprintf("%d words", op.Count))
		}, nil, nil
	case GraphOp:
		rec, ok := c.graphs[op.Graph.ID]
		if !ok {
			return nil, nil, fmt.Errorf("gpu: graph %#x is not a graph from Capture here", op.Graph.ID)
		}
		if rec.freed != 0 {
			return nil, nil, fmt.Errorf("gpu: graph of %d ops: its kernels use device memory at %#x, freed after it was captured, "+
				"so it would read and write whatever lives there now; capture it again on live buffers (or Update it)", op.Graph.Ops, uint64(rec.freed))
		}
		return func() error {
			return d.check(d.cuGraphLaunch(uintptr(op.Graph.ID), c.stream), "cuGraphLaunch", op.opName())
		}, nil, nil
	case Sync:
		return func() error { return c.sync("at a Sync op") }, nil, nil
	case OnStream:
		return c.prepareOnStream(op)
	case Record:
		return func() error {
			e, err := c.event(op.Event)
			if err != nil {
				return err
			}
			return d.check(d.cuEventRecord(e, c.stream), "cuEventRecord", op.opName())
		}, nil, nil
	case WaitFor:
		return func() error {
			e, err := c.event(op.Event)
			if err != nil {
				return err
			}
			return d.check(d.cuStreamWaitEvent(c.stream, e, 0), "cuStreamWaitEvent", op.opName())
		}, nil, nil
	case AllocSlot:
		return c.prepareAllocSlot(op)
	case FreeSlot:
		return c.prepareFreeSlot(op)
	case GEMM:
		return c.prepareGEMM(op)
	case LibOp:
		return c.prepareLib(op)
	case nil:
		return nil, nil, errors.New("gpu: nil op")
	}
	return nil, nil, fmt.Errorf("gpu: unknown op %T", op)
}

func (c *Context) prepareLaunch(l Launch) (func() error, func(), error) {
	f, err := c.function(l.Kernel)
	if err != nil {
		return nil, nil, err
	}
	if l.Grid.Count() == 0 || l.Block.Count() == 0 {
		return nil, nil, fmt.Errorf("gpu: launch %s: grid and block need at least one thread each", l)
	}
	if l.Kernel.Attrs.MaxThreadsPerBlock > 0 && l.Block.Count() > l.Kernel.Attrs.MaxThreadsPerBlock {
		return nil, nil, fmt.Errorf("gpu: launch %s: %d threads per block, but this kernel allows at most %d",
			l, l.Block.Count(), l.Kernel.Attrs.MaxThreadsPerBlock)
	}
	if l.Shared > 48<<10 && c.maxDyn[f] < l.Shared {
		// Past 48 KiB a kernel must opt in to dynamic shared memory.
		if err := c.d.check(c.d.cuFuncSetAttribute(f, funcMaxDynamicSharedSize, int32(l.Shared)),
			"cuFuncSetAttribute", fmt.Sprintf("%s dynamic shared memory %d bytes", l.Kernel.Name, l.Shared)); err != nil {
			return nil, nil, err
		}
		c.maxDyn[f] = l.Shared
	}
	p, err := packArgs(c.d, l.Args)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: launch %s: %w", l, err)
	}
	var slotArgs []int // the arguments read from slots when enqueued
	for i, a := range l.Args {
		if a.Kind == ArgSlot {
			slotArgs = append(slotArgs, i)
		}
	}
	return func() error {
		for _, i := range slotArgs {
			ptr, ok := c.slots[int(l.Args[i].Bits)]
			if !ok {
				return fmt.Errorf("gpu: launch %s: argument %d reads slot %d, which holds no memory: allocate it with an AllocSlot op first", l, i, l.Args[i].Bits)
			}
			p.vals[i] = uint64(ptr)
		}
		if r := c.d.launch(f, l.Grid, l.Block, uint32(l.Shared), c.stream, p.array()); r != 0 {
			return c.d.check(r, "cuLaunchKernel", l.String())
		}
		return nil
	}, p.release, nil
}

// prepareOnStream enqueues op.Op on its stream: the enqueueing code reads
// c.stream, so it runs with c.stream switched for the while.
func (c *Context) prepareOnStream(op OnStream) (func() error, func(), error) {
	if op.Stream < 0 {
		return nil, nil, fmt.Errorf("gpu: %s: streams are numbered from 0", op.opName())
	}
	if _, nested := op.Op.(OnStream); nested {
		return nil, nil, fmt.Errorf("gpu: %s: an OnStream inside another", op.opName())
	}
	inner, cleanup, err := c.prepareOp(op.Op)
	if err != nil {
		return nil, nil, err
	}
	return func() error {
		s, err := c.streamNumbered(op.Stream)
		if err != nil {
			return err
		}
		saved := c.stream
		c.stream = s
		defer func() { c.stream = saved }()
		return inner()
	}, cleanup, nil
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
		run, done, err := c.prepareSteps(ops)
		if err != nil {
			return err
		}
		defer done()
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
			if err := d.check(d.cuEventRecord(evs[2*i+1], s), "cuEventRecord", op.opName()); err != nil {
				return err
			}
			if err := run[i](); err != nil {
				return err
			}
			if err := d.check(d.cuEventRecord(evs[2*i+2], s), "cuEventRecord", op.opName()); err != nil {
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
			spans = append(spans, Span{Stream: n, Op: inner.opName(), Start: start, End: end})
		}
		return nil
	})
	return spans, err
}

// prepareAllocSlot allocates into a slot when enqueued.
func (c *Context) prepareAllocSlot(a AllocSlot) (func() error, func(), error) {
	d := c.d
	if a.Bytes <= 0 {
		return nil, nil, fmt.Errorf("gpu: %s: size must be positive", a.opName())
	}
	if a.Pool && d.cuMemAllocAsync == nil {
		return nil, nil, errors.New("gpu: this driver has no stream-ordered allocator (cuMemAllocAsync, CUDA 11.2 or newer)")
	}
	return func() error {
		if _, ok := c.slots[a.Slot]; ok {
			return fmt.Errorf("gpu: %s: the slot still holds memory; free it first", a.opName())
		}
		var p uint64
		var err error
		if a.Pool {
			err = d.check(d.cuMemAllocAsync(&p, uint64(a.Bytes), c.stream), "cuMemAllocAsync", a.opName())
		} else {
			err = d.check(d.cuMemAlloc(&p, uint64(a.Bytes)), "cuMemAlloc_v2", a.opName())
		}
		if err == nil {
			c.slots[a.Slot] = DevicePtr(p)
		}
		return err
	}, nil, nil
}

// prepareFreeSlot frees a slot's memory when enqueued.
func (c *Context) prepareFreeSlot(f FreeSlot) (func() error, func(), error) {
	d := c.d
	if f.Pool && d.cuMemFreeAsync == nil {
		return nil, nil, errors.New("gpu: this driver has no stream-ordered allocator (cuMemFreeAsync, CUDA 11.2 or newer)")
	}
	return func() error {
		p, ok := c.slots[f.Slot]
		if !ok {
			return fmt.Errorf("gpu: %s: the slot holds no memory", f.opName())
		}
		delete(c.slots, f.Slot)
		if f.Pool {
			return d.check(d.cuMemFreeAsync(uint64(p), c.stream), "cuMemFreeAsync", f.opName())
		}
		return d.check(d.cuMemFree(uint64(p)), "cuMemFree_v2", f.opName())
	}, nil, nil
}

// Bench times b on the GPU thread.
func (c *Context) Bench(b Bench) (Timing, error) {
	if err := b.defaults(); err != nil {
		return Timing{}, err
	}
	t := Timing{Name: b.Name}
	err := c.do(func() error {
		var err error
		t, err = c.bench(b)
		return err
	})
	return t, err
}

func (c *Context) bench(b Bench) (Timing, error) {
	d := c.d
	t := Timing{Name: b.Name}
	runs := make([]func() error, len(b.Ops))
	for i, ops := range b.Ops {
		run, done, err := c.prepare(ops)
		if err != nil {
			return t, fmt.Errorf("bench %s: %w", b.Name, err)
		}
		defer done()
		runs[i] = run
	}
	var flush func() error
	if b.FlushL2 {
		var err error
		if flush, err = c.l2Flusher(); err != nil {
			return t, err
		}
	}
	var start, end uintptr
	if err := errors.Join(d.check(d.cuEventCreate(&start, 0), "cuEventCreate", ""), d.check(d.cuEventCreate(&end, 0), "cuEventCreate", "")); err != nil {
		return t, err
	}
	defer d.cuEventDestroy(start)
	defer d.cuEventDestroy(end)

	total := b.Warmup + b.Reps
	for i := 0; i < total; i++ {
		if flush != nil {
			if err := flush(); err != nil {
				return t, err
			}
		}
		if err := d.check(d.cuEventRecord(start, c.stream), "cuEventRecord", ""); err != nil {
			return t, err
		}
		t0 := time.Now()
		err := runs[i%len(runs)]()
		host := time.Since(t0)
		if err != nil {
			return t, err
		}
		if err := d.check(d.cuEventRecord(end, c.stream), "cuEventRecord", ""); err != nil {
			return t, err
		}
		if err := d.check(d.cuEventSynchronize(end), "cuEventSynchronize", "after "+b.Name); err != nil {
			return t, err
		}
		var ms float32
		if err := d.check(d.cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime", ""); err != nil {
			return t, err
		}
		if i >= b.Warmup {
			t.Device = append(t.Device, time.Duration(float64(ms)*1e6))
			if b.HostWall {
				t.Host = append(t.Host, host)
			}
		}
		if b.Progress != nil {
			b.Progress(i+1, total)
		}
	}
	return t, nil
}

// l2Flusher returns an op that overwrites twice the L2 size, so that the
// next repetition finds none of its inputs in L2.
func (c *Context) l2Flusher() (func() error, error) {
	bytes := 2 * c.info.L2Bytes
	if bytes == 0 {
		bytes = 128 << 20
	}
	if c.flushBuf == 0 {
		var p uint64
		if err := c.d.check(c.d.cuMemAlloc(&p, uint64(bytes)), "cuMemAlloc_v2", "L2 flush buffer"); err != nil {
			return nil, err
		}
		c.flushBuf = DevicePtr(p)
	}
	return func() error {
		return c.d.check(c.d.cuMemsetD32Async(uint64(c.flushBuf), 0, uint64(bytes/4), c.stream), "cuMemsetD32Async", "L2 flush")
	}, nil
}
