package transfers

import (
	"errors"
	"fmt"
	"math"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

func pipelineProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "copy in, compute, copy out", DType: "float32", Unit: "GB/s each way",
		CheckSizes: []lessons.Size{{1, 1}, {1000, 2}, {4099, 4}, {1 << 20, 4}, {1000, 3, 1}, {4099, 4, 4000}},
		Impls: []lessons.Impl{
			{Name: copyIn, Library: true, Summary: "x copied to the GPU, from pinned memory, nothing else"},
			{Name: compute, Library: true, Kernels: []string{"work"}, Summary: "the work kernel alone on x already on the GPU"},
			{Name: copyOut, Library: true, Summary: "y copied back to pinned memory, nothing else"},
			{Name: duplex, Library: true, Summary: "x copied in on one stream while y is copied out on another: the link both ways at once, the most any pipeline can overlap"},
			{Name: serial, Library: true, Kernels: []string{"work"}, Summary: "copy all in, compute all, copy all out, one after another on one stream"},
			{Name: pipelined, Library: true, Kernels: []string{"work"},
				Summary: "32 chunks, each copied in, computed and copied out on one of the streams in turn, so one chunk's copies overlap another's compute"},
			{Name: pageablePipe, Library: true, Kernels: []string{"work"},
				Summary: "the same pipeline, with x and y in pageable host memory: each async copy goes through the driver's staging buffer"},
		},
		Setup: setupPipeline,
		// x and y on the device, with room for a schedule's last buffer,
		// and a poisoned buffer; pinned and pageable x and y on the host,
		// the data, and read-backs.
		Memory: func(s lessons.Size) lessons.Memory {
			b := 4 * int64(s[0])
			return lessons.Memory{Device: 3*b + 8*maxChunks, Host: 8 * b}
		},
		// GB/s each way counts the 4n bytes of x that a row moves to the
		// device, or the 4n of y it moves back, or both, each in its own
		// direction; for compute alone, which crosses the link not at all,
		// the bytes of x its kernel gets through. Each row then reads
		// against the link's rate each way, and every stage in one unit.
		Work: func(s lessons.Size) float64 { return 4 * float64(s[0]) },
		SizeLabel: func(s lessons.Size) string {
			if len(s) > 2 {
				return fmt.Sprintf("n=%d, %s, %d rounds", s[0], streamsLabel(s[1]), s[2])
			}
			return fmt.Sprintf("n=%d, %s", s[0], streamsLabel(s[1]))
		},
	}
}

// streamsLabel counts streams: "1 stream", "4 streams".
func streamsLabel(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}

// pcase is one size of the pipeline: x in pinned (or pageable) host
// memory, y back into pinned (or pageable) host memory, through x and y on
// the device.
type pcase struct {
	env     *lessons.Env
	n       int
	streams int
	iters   int // work's rounds an element
	x       []float32
	hx, hy  gpu.HostPtr // pinned
	px, py  gpu.HostPtr // pageable
	dx, dy  gpu.DevicePtr
	nan     gpu.DevicePtr // NaN, to poison host memory with
	impl    string
}

func setupPipeline(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	c := &pcase{env: env, n: s[0], streams: s[1], iters: workIters, x: numeric.RandomFloats(s[0], uint64(s[0]+s[1]))}
	if len(s) > 2 {
		c.iters = s[2]
	}
	b := 4 * int64(c.n)
	// A schedule's device buffers, a chunk of ⌈n/chunks⌉ elements each,
	// end by element buffers·⌈n/chunks⌉ ≤ chunks·⌈n/chunks⌉ < n + chunks:
	// x and y on the device have room for maxChunks elements past n.
	padded := b + 4*maxChunks
	var err error
	for _, p := range []*gpu.DevicePtr{&c.dx, &c.dy} {
		if *p, err = env.Dev.Alloc(padded); err != nil {
			c.Free()
			return nil, err
		}
	}
	if c.nan, err = env.Dev.Alloc(b); err != nil {
		c.Free()
		return nil, err
	}
	if err := gpu.WriteSlice(env.Dev, c.dx, c.x); err != nil {
		c.Free()
		return nil, err
	}
	for _, h := range []struct {
		p      *gpu.HostPtr
		pinned bool
	}{{&c.hx, true}, {&c.hy, true}, {&c.px, false}, {&c.py, false}} {
		if *h.p, err = env.Dev.AllocHost(b, h.pinned); err != nil {
			c.Free()
			return nil, err
		}
	}
	// Fill hx and px, and run the whole once, so that each part alone
	// finds what it reads in place.
	k, err := env.FileKernel(kernelFile, "work")
	if err != nil {
		c.Free()
		return nil, err
	}
	ops := append([]gpu.Op{gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(c.hx), Src: uint64(c.dx), Bytes: b},
		gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(c.px), Src: uint64(c.dx), Bytes: b},
		gpu.Memset{Dst: c.nan, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.n)}}, c.serial(k)...)
	if err := env.Dev.Run(ops...); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// host is where x and y are on the host for the last impl: pageable
// memory for the pageable pipeline, else pinned.
func (c *pcase) host() (x, y gpu.HostPtr) {
	if c.impl == pageablePipe {
		return c.px, c.py
	}
	return c.hx, c.hy
}

// The pieces of the pipeline: elements [from, from+n) of x and y on the
// host, at elements [at, at+n) of x and y on the device.
func (c *pcase) in(from, at, n int) gpu.Op {
	hx, _ := c.host()
	return gpu.Copy{Kind: gpu.HostToDevice, Dst: uint64(c.dx) + 4*uint64(at), Src: uint64(hx) + 4*uint64(from), Bytes: 4 * int64(n)}
}

func (c *pcase) out(from, at, n int) gpu.Op {
	_, hy := c.host()
	return gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(hy) + 4*uint64(from), Src: uint64(c.dy) + 4*uint64(at), Bytes: 4 * int64(n)}
}

func (c *pcase) work(k gpu.Kernel, at, n int) gpu.Op {
	grid := max(1, min(gpu.Blocks(n, 256), c.env.Dev.Info().TwoWaves(256)))
	return gpu.Launch{Kernel: k, Grid: gpu.Dim(grid), Block: gpu.Dim(256),
		Args: []gpu.Arg{gpu.Ptr(c.dx + gpu.DevicePtr(4*at)), gpu.Ptr(c.dy + gpu.DevicePtr(4*at)), gpu.Int32(int32(n)), gpu.Int32(int32(c.iters))}}
}

// serial is the whole in three steps on the device's stream.
func (c *pcase) serial(k gpu.Kernel) []gpu.Op {
	return []gpu.Op{c.in(0, 0, c.n), c.work(k, 0, c.n), c.out(0, 0, c.n)}
}

// chunked is the pipeline over streams 1…streams: chunk i goes to stream
// 1 + i % streams, each stream starting after event 0 (recorded on the
// device's stream first) and ending with its event, which the device's
// stream waits for, unless join is false.
func (c *pcase) chunked(k gpu.Kernel, join bool) []gpu.Op {
	ops := []gpu.Op{gpu.Record{Event: 0}}
	for s := 1; s <= c.streams; s++ {
		ops = append(ops, gpu.OnStream{Stream: s, Op: gpu.WaitFor{Event: 0}})
	}
	chunk := (c.n + pipeChunks - 1) / pipeChunks
	for i := 0; i*chunk < c.n; i++ {
		from, n := i*chunk, min(chunk, c.n-i*chunk)
		s := 1 + i%c.streams
		ops = append(ops, gpu.OnStream{Stream: s, Op: c.in(from, from, n)}, gpu.OnStream{Stream: s, Op: c.work(k, from, n)},
			gpu.OnStream{Stream: s, Op: c.out(from, from, n)})
	}
	if join {
		ops = append(ops, c.join()...)
	}
	return ops
}

// join makes the device's stream wait for everything enqueued so far on
// streams 1…streams: each records its event, which the device's stream
// waits for.
func (c *pcase) join() []gpu.Op {
	var ops []gpu.Op
	for s := 1; s <= c.streams; s++ {
		ops = append(ops, gpu.OnStream{Stream: s, Op: gpu.Record{Event: s}}, gpu.WaitFor{Event: s})
	}
	return ops
}

// scheduled is the learner's schedule sc over the case's data.
func (c *pcase) scheduled(k gpu.Kernel, sc *schedule) []gpu.Op {
	return sc.lay(c.n, func(kind string, from, at, n int) gpu.Op {
		switch kind {
		case "in":
			return c.in(from, at, n)
		case "out":
			return c.out(from, at, n)
		}
		return c.work(k, at, n)
	})
}

func (c *pcase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
	c.impl = impl.Name
	k, err := c.env.FileKernel(kernelFile, "work")
	if err != nil {
		return nil, err
	}
	switch impl.Name {
	case copyIn:
		return []gpu.Op{c.in(0, 0, c.n)}, nil
	case compute:
		return []gpu.Op{c.work(k, 0, c.n)}, nil
	case copyOut:
		return []gpu.Op{c.out(0, 0, c.n)}, nil
	case duplex:
		return []gpu.Op{gpu.Record{Event: 0},
			gpu.OnStream{Stream: 1, Op: gpu.WaitFor{Event: 0}}, gpu.OnStream{Stream: 2, Op: gpu.WaitFor{Event: 0}},
			gpu.OnStream{Stream: 1, Op: c.in(0, 0, c.n)}, gpu.OnStream{Stream: 2, Op: c.out(0, 0, c.n)},
			gpu.OnStream{Stream: 1, Op: gpu.Record{Event: 1}}, gpu.OnStream{Stream: 2, Op: gpu.Record{Event: 2}},
			gpu.WaitFor{Event: 1}, gpu.WaitFor{Event: 2}}, nil
	case serial:
		return c.serial(k), nil
	case pipelined:
		if sc, ok := schedules.In(impl); ok {
			return c.scheduled(k, sc), nil // the learner's schedule, judged like pipelined
		}
		return c.chunked(k, true), nil
	case pageablePipe:
		return c.chunked(k, true), nil // through px and py: c.impl picks them
	}
	return nil, errors.New("the pipeline has no variant " + impl.Name)
}

// Poison fills with NaN what the last impl writes: x or y on the device,
// y on the host.
func (c *pcase) Poison() error {
	b := 4 * int64(c.n)
	nan := func(p gpu.DevicePtr) gpu.Op {
		return gpu.Memset{Dst: p, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.n)}
	}
	_, hy := c.host()
	hostNaN := gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(hy), Src: uint64(c.nan), Bytes: b}
	switch c.impl {
	case copyIn:
		return c.env.Dev.Run(nan(c.dx))
	case compute:
		return c.env.Dev.Run(nan(c.dy))
	case copyOut:
		return c.env.Dev.Run(hostNaN)
	case duplex:
		return c.env.Dev.Run(nan(c.dx), hostNaN)
	}
	return c.env.Dev.Run(nan(c.dx), nan(c.dy), hostNaN)
}

// want is work's result on x, in float64: iters rounds of v = a·v + (1 −
// a) leave 1 + (x − 1)·aⁱᵗᵉʳˢ.
func (c *pcase) want() []float64 {
	a := 1 - 1.0/1024
	f := math.Pow(a, float64(c.iters))
	out := make([]float64, c.n)
	for i, v := range c.x {
		out[i] = 1 + (float64(v)-1)*f
	}
	return out
}

// tolWork allows for fp32 rounding in each of work's rounds, which its
// pull towards 1 damps to about 2⁻²⁴ / 2⁻¹⁰ in all.
const tolWork = 2e-4

// Check compares what the last impl wrote: x on the device with x; y on
// the device or the host with work's result.
func (c *pcase) Check() (numeric.CheckStats, error) {
	switch c.impl {
	case copyIn, duplex:
		got, err := gpu.Download[float32](c.env.Dev, c.dx, c.n)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		st, err := numeric.CompareMove("x", got, c.x, func(i int) int { return i }, []int{c.n})
		if err != nil || c.impl == copyIn {
			return st, err
		}
	case compute:
		got, err := gpu.Download[float32](c.env.Dev, c.dy, c.n)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		return numeric.Compare("y", got, c.want(), []int{c.n}, tolWork)
	}
	_, hy := c.host()
	got, err := gpu.DownloadHost[float32](c.env.Dev, hy, c.n)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	return numeric.Compare("y", got, c.want(), []int{c.n}, tolWork)
}

func (c *pcase) Free() {
	c.env.FreeAll(c.dx, c.dy, c.nan)
	for _, h := range []gpu.HostPtr{c.hx, c.hy, c.px, c.py} {
		if h != 0 {
			c.env.Dev.FreeHost(h)
		}
	}
}
