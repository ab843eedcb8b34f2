package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"
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
func (c *Context) LoadKernel(img *Image, name string) (Kernel, error) {
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

func (c *Context) loadKernel(img *Image, name string) (KernelAttrs, error) {
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

// Capture records ops into a CUDA graph and instantiates it.
func (c *Context) Capture(ops ...Op) (Graph, error) {
	var g Graph
	err := c.do(func() error {
		d := c.d
		run, done, err := c.prepare(ops)
		if err != nil {
			return err
		}
		defer done()
		const captureThreadLocal = 1
		if err := d.check(d.cuStreamBeginCapture(c.stream, captureThreadLocal), "cuStreamBeginCapture_v2", ""); err != nil {
			return err
		}
		runErr := run()
		var graph uintptr
		endErr := d.check(d.cuStreamEndCapture(c.stream, &graph), "cuStreamEndCapture", describeOps(ops))
		if err := errors.Join(runErr, endErr); err != nil {
			if graph != 0 {
				d.cuGraphDestroy(graph)
			}
			return err
		}
		var exec uintptr
		if err := d.check(d.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags", describeOps(ops)); err != nil {
			d.cuGraphDestroy(graph)
			return err
		}
		c.graphs[uint64(exec)] = graph
		g = Graph{ID: uint64(exec), Ops: len(ops)}
		return nil
	})
	return g, err
}

// FreeGraph releases a graph from Capture.
func (c *Context) FreeGraph(g Graph) error {
	return c.do(func() error {
		graph, ok := c.graphs[g.ID]
		if !ok {
			return fmt.Errorf("gpu: free graph %#x: not a graph from Capture", g.ID)
		}
		delete(c.graphs, g.ID)
		return errors.Join(c.d.check(c.d.cuGraphExecDestroy(uintptr(g.ID)), "cuGraphExecDestroy", ""),
			c.d.check(c.d.cuGraphDestroy(graph), "cuGraphDestroy", ""))
	})
}

// prepare turns ops into one function that enqueues them all, with argument
// memory packed and pinned up front, so that enqueueing allocates nothing.
// done releases that memory; call it once nothing can read it any more.
func (c *Context) prepare(ops []Op) (run func() error, done func(), err error) {
	steps := make([]func() error, 0, len(ops))
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
		if _, ok := c.graphs[op.Graph.ID]; !ok {
			return nil, nil, fmt.Errorf("gpu: graph %#x is not a graph from Capture here", op.Graph.ID)
		}
		return func() error {
			return d.check(d.cuGraphLaunch(uintptr(op.Graph.ID), c.stream), "cuGraphLaunch", op.opName())
		}, nil, nil
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
	return func() error {
		if r := c.d.launch(f, l.Grid, l.Block, uint32(l.Shared), c.stream, p.array()); r != 0 {
			return c.d.check(r, "cuLaunchKernel", l.String())
		}
		return nil
	}, p.release, nil
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
