// Package transfers is lesson 3: copies between the host and the GPU over
// the PCIe link, from pageable, pinned and mapped memory; what pinning
// costs; and a pipeline that overlaps copies with compute on streams,
// drawn as a timeline.
package transfers

import (
	"embed"
	"errors"
	"fmt"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.sched results testdata
var files embed.FS

// kernelFile holds the lesson's kernels.
const kernelFile = "transfers.cu"

// The copy problem's impls.
const (
	h2dPageable = "host→device, pageable"
	h2dPinned   = "host→device, pinned"
	d2hPageable = "device→host, pageable"
	d2hPinned   = "device→host, pinned"
	mapped      = "read_mapped (zero-copy)"
)

// The pipeline problem's impls.
const (
	copyIn       = "copy in alone"
	compute      = "compute alone"
	copyOut      = "copy out alone"
	duplex       = "copies in and out at once"
	serial       = "serial"
	pipelined    = "pipelined"
	pageablePipe = "pipelined, pageable"
)

// The pipeline's shape: 2²⁶ floats (256 MiB each way) in 32 chunks, and
// the arithmetic that makes computing a chunk take about as long as
// copying it on an H100.
const (
	pipeN      = 1 << 26
	pipeChunks = 32
	workIters  = 2000
)

func init() {
	var sizes []lessons.Size
	// Every point is checked: a check reads the whole copy back through
	// cudarepl's worker, 64 MiB a call.
	for _, b := range []int{4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30} {
		sizes = append(sizes, lessons.Size{b})
	}
	pipe := pipelineProblem()
	var streams []lessons.Size
	for _, s := range []int{1, 2, 4} {
		streams = append(streams, lessons.Size{pipeN, s})
	}
	// The sweep by rounds leaves out the pageable pipeline: the Overlap
	// step shows it beside the pinned one.
	byRounds := []string{copyIn, compute, copyOut, duplex, serial, pipelined}
	var rounds []lessons.Size
	for _, r := range []int{1000, 2000, 3000, 4000} {
		rounds = append(rounds, lessons.Size{pipeN, 4, r})
	}
	lessons.Register(lessons.Def{
		Number: 3, Slug: "transfers", Files: files, Kernels: kernelFile, Problem: copyProblem(),
		Exercise: &lessons.Exercise{
			File: "pipeline.sched", Kernel: "schedule", Like: pipelined, Bench: lessons.Size{pipeN, 4},
			What: "schedule", Plan: schedules,
			Task: "The schedule puts all 32 chunks on stream 1: correct, but nothing overlaps, so it takes as long as the serial pipeline. " +
				"Spread the chunks over several streams and order them with events, so that one chunk's copies run while another is worked on, " +
				"and the device's stream waits for every stream before y is read. Keep x and y pinned; if you give the device only a few buffers, " +
				"make sure no chunk overwrites a buffer that another chunk is still using.",
		},
		Planted: []lessons.Planted{
			{File: "solution.sched"},
			{File: "one_stream.sched", Want: "nothing in this schedule can run at once"},
			{File: "no_join.sched", Want: "can still be running when y is read"},
			{File: "split.sched", Want: "nothing orders them"},
			{File: "no_start.sched", Want: "before what the device's stream did"},
			{File: "short.sched", Want: "chunk 31 is never copied in"},
			{File: "buffers.sched"},
			{File: "pageable.sched", Want: "may return only once it is done"},
			{File: "shared_buffer.sched", Want: "can overwrite device buffer 0 before work 0"},
			{File: "event_twice.sched", Want: "a wait sees only an event's last record"},
		},
		Actions: map[string]lessons.Action{
			"The link":  &lessons.Run{Name: "measure", F: link},
			"Zero-copy": &lessons.ShowKernel{Names: []string{"read_mapped"}},
			"Check":     &lessons.CheckStep{More: []*lessons.Problem{pipe}},
			"Copies by size": &lessons.Sweep{Title: "Host↔device copies", XLabel: "bytes copied",
				Sizes: sizes},
			"What pinning costs": &lessons.Run{Name: "measure", F: pinning},
			"A pipeline":         &lessons.ShowKernel{Names: []string{"work"}},
			"Overlap":            &lessons.Sweep{Title: "Copy in, compute, copy out: 2²⁶ floats", XLabel: "streams", Problem: pipe, Sizes: streams, XDim: 1},
			"When compute is the slowest part": &lessons.Sweep{Title: "Copy in, compute, copy out on 4 streams, by the work an element", XLabel: "rounds of work an element",
				Problem: pipe, Impls: byRounds, Sizes: rounds, XDim: 2},
			"The timeline":              &lessons.Run{Name: "measure", F: timeline},
			"Reading before it is done": &lessons.Run{Name: "measure", F: tooEarly},
			"Exercise":                  &lessons.ExerciseStep{},
		},
	})
}

func copyProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "host↔device copy", DType: "float32", Reference: "the input, bit for bit", Unit: "GB/s", Peak: gpu.PeakPCIe,
		CheckSizes: []lessons.Size{{4}, {16}, {4096 + 16}, {1 << 20}},
		Impls: []lessons.Impl{
			{Name: h2dPageable, Library: true, Summary: "cuMemcpyHtoDAsync from ordinary (pageable) host memory: the driver stages it through a pinned buffer of its own"},
			{Name: h2dPinned, Library: true, Summary: "cuMemcpyHtoDAsync from page-locked memory (cuMemHostAlloc): the copy engine reads it directly"},
			{Name: d2hPageable, Library: true, Summary: "cuMemcpyDtoHAsync into pageable memory"},
			{Name: d2hPinned, Library: true, Summary: "cuMemcpyDtoHAsync into pinned memory"},
			{Name: mapped, Library: true, Kernels: []string{"read_mapped"}, Summary: "a kernel loading pinned host memory directly, each load crossing the link",
				Requires: func(s lessons.Size) error {
					if s[0]%16 != 0 {
						return fmt.Errorf("reads float4s: %d bytes is not a multiple of 16", s[0])
					}
					return nil
				}},
		},
		Setup: setupCopy,
		// On the device, the destination of copies in and the source of
		// copies out; on the host, two buffers each of pageable and pinned
		// memory, the data, and a read-back.
		Memory: func(s lessons.Size) lessons.Memory {
			b := int64(s[0])
			return lessons.Memory{Device: 2 * b, Host: 6 * b}
		},
		Work:      func(s lessons.Size) float64 { return float64(s[0]) },
		SizeLabel: func(s lessons.Size) string { return bytesLabel(int64(s[0])) },
	}
}

// tcase is one size of the copy problem.
type tcase struct {
	env            *lessons.Env
	bytes          int64
	x              []float32
	dIn, dOut      gpu.DevicePtr // copies in land in dIn; copies out read dOut, which holds x
	pageIn, pinIn  gpu.HostPtr   // hold x, to copy in
	pageOut, pinOt gpu.HostPtr   // copies out land here
	impl           string        // the impl Ops was last asked for
}

func setupCopy(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	n := s[0] / 4
	c := &tcase{env: env, bytes: int64(s[0]), x: numeric.RandomFloats(n, uint64(s[0]))}
	var err error
	if c.dOut, err = gpu.Upload(env.Dev, c.x); err != nil {
		return nil, err
	}
	if c.dIn, err = env.Dev.Alloc(c.bytes); err != nil {
		c.Free()
		return nil, err
	}
	for _, h := range []struct {
		p      *gpu.HostPtr
		pinned bool
	}{{&c.pageIn, false}, {&c.pinIn, true}, {&c.pageOut, false}, {&c.pinOt, true}} {
		if *h.p, err = env.Dev.AllocHost(c.bytes, h.pinned); err != nil {
			c.Free()
			return nil, err
		}
	}
	// The host copies of x, through a copy out of dOut.
	if err := env.Dev.Run(gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(c.pageIn), Src: uint64(c.dOut), Bytes: c.bytes},
		gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(c.pinIn), Src: uint64(c.dOut), Bytes: c.bytes}); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// bytesLabel is a size in bytes as "4 KiB", "256 MiB", or "4112 B" where
// no binary unit divides it.
func bytesLabel(b int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.size && b%u.size == 0 {
			return fmt.Sprintf("%d %s", b/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d B", b)
}

// Ops is one copy, or the zero-copy kernel on enough blocks to fill the
// GPU twice.
func (c *tcase) Ops(impl lessons.Impl, _ gpu.Kernel, block int) ([]gpu.Op, error) {
	c.impl = impl.Name
	in := func(src gpu.HostPtr) []gpu.Op {
		return []gpu.Op{gpu.Copy{Kind: gpu.HostToDevice, Dst: uint64(c.dIn), Src: uint64(src), Bytes: c.bytes}}
	}
	out := func(dst gpu.HostPtr) []gpu.Op {
		return []gpu.Op{gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(dst), Src: uint64(c.dOut), Bytes: c.bytes}}
	}
	switch impl.Name {
	case h2dPageable:
		return in(c.pageIn), nil
	case h2dPinned:
		return in(c.pinIn), nil
	case d2hPageable:
		return out(c.pageOut), nil
	case d2hPinned:
		return out(c.pinOt), nil
	case mapped:
		k, err := c.env.FileKernel(kernelFile, "read_mapped")
		if err != nil {
			return nil, err
		}
		n4 := int(c.bytes / 16)
		grid := max(1, min(gpu.Blocks(n4, block), c.env.Dev.Info().TwoWaves(block)))
		// Pinned memory is mapped at the same address on the GPU (unified
		// addressing), so the host pointer is the kernel's pointer too.
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(grid), Block: gpu.Dim(block),
			Args: []gpu.Arg{gpu.Ptr(gpu.DevicePtr(c.pinIn)), gpu.Ptr(c.dIn), gpu.Int32(int32(n4))}}}, nil
	}
	return nil, errors.New("copies have no variant " + impl.Name)
}

// toHost reports whether the last impl copied out to host memory, and
// where.
func (c *tcase) toHost() (gpu.HostPtr, bool) {
	switch c.impl {
	case d2hPageable:
		return c.pageOut, true
	case d2hPinned:
		return c.pinOt, true
	}
	return 0, false
}

// Poison fills what the last impl writes with NaN: dIn, or the host
// buffer, through a copy out of a poisoned dIn.
func (c *tcase) Poison() error {
	ops := []gpu.Op{gpu.Memset{Dst: c.dIn, Value: lessons.PoisonWord(gpu.FP32), Count: c.bytes / 4}}
	if h, ok := c.toHost(); ok {
		ops = append(ops, gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(h), Src: uint64(c.dIn), Bytes: c.bytes})
	}
	return c.env.Dev.Run(ops...)
}

// Check compares what the last impl wrote with x, bit for bit.
func (c *tcase) Check() (numeric.CheckStats, error) {
	n := int(c.bytes / 4)
	var got []float32
	var err error
	if h, ok := c.toHost(); ok {
		got, err = gpu.DownloadHost[float32](c.env.Dev, h, n)
	} else {
		got, err = gpu.Download[float32](c.env.Dev, c.dIn, n)
	}
	if err != nil {
		return numeric.CheckStats{}, err
	}
	return numeric.CompareMove("y", got, c.x, func(i int) int { return i }, []int{n})
}

func (c *tcase) Free() {
	c.env.FreeAll(c.dIn, c.dOut)
	for _, h := range []gpu.HostPtr{c.pageIn, c.pinIn, c.pageOut, c.pinOt} {
		if h != 0 {
			c.env.Dev.FreeHost(h)
		}
	}
}
