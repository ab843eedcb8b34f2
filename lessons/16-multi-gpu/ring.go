package multigpu

import (
	"fmt"
	"slices"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/nccl"
	"cudarepl/plots"
)

// The hand-written ring all-reduce's versions, and NCCL's beside them.
const (
	ringCopy  = "ring v1: copy the chunk, then add it"
	ringPeer  = "ring v2: add straight from the other GPU's memory"
	ncclRing  = "NCCL all-reduce"
	ringAddFn = "ring_add"
)

// ringVersions are the versions the A ring by hand step times, NCCL last.
var ringVersions = []string{ringCopy, ringPeer, ncclRing}

// ringColumns are the versions' short names, for the table's columns.
var ringColumns = map[string]string{ringCopy: "v1", ringPeer: "v2", ncclRing: "NCCL"}

// ringSizes are the all-reduce's sizes in bytes a GPU: 4 MiB to 1 GiB.
var ringSizes = sizesBy4(4<<20, 1<<30)

// ring is an all-reduce of count floats a GPU on n GPUs, written as ring
// steps: ring_add launches and peer copies, ordered across the GPUs by
// events (a GPU's copy waits for the event its neighbour recorded after
// the step that made the chunk ready).
type ring struct {
	n       int
	count   int64           // floats a GPU
	data    []gpu.DevicePtr // a GPU's buffer: the input, then the sum
	scratch []gpu.DevicePtr // a chunk a GPU, where v1 copies the chunk it receives
	add     gpu.Kernel      // ring_add, loaded on every GPU
	blocks  int             // ring_add's grid: enough blocks to fill every SM
}

// chunk is floats a chunk: count / n.
func (r *ring) chunk() int64 { return r.count / int64(r.n) }

// at is the address of chunk c of GPU g's buffer.
func (r *ring) at(g, c int) gpu.DevicePtr { return r.data[g] + gpu.DevicePtr(4*int64(c)*r.chunk()) }

// event numbers the event GPU g records after step s of phase (0 the
// reduce-scatter, 1 the all-gather).
func (r *ring) event(phase, s, g int) int { return 1 + (phase*(r.n-1)+s)*r.n + g }

// mod is a mod n in 0 … n−1, for a of either sign.
func mod(a, n int) int { return (a%n + n) % n }

// ops is one all-reduce by version v (ringCopy or ringPeer), as the steps
// of every GPU in the order they are enqueued.
//
// Reduce-scatter, step s = 0 … n−2: GPU g adds chunk (g − s − 1) mod n of
// GPU g − 1 into its own, once GPU g − 1 has finished adding into that
// chunk at step s − 1. After it GPU g holds chunk (g + 1) mod n summed.
// All-gather, step s: GPU g copies chunk (g − s) mod n, summed, from GPU
// g − 1 into its own buffer, once GPU g − 1 has it. Before the all-gather
// writes into a GPU's buffer, the GPU after it must be done reading it.
func (r *ring) ops(v string) []gpu.DevOp {
	n, bytes := r.n, 4*r.chunk()
	var out []gpu.DevOp
	// A run starts once every GPU is done with the last run's all-gather,
	// which read the buffers this run writes.
	for g := range n {
		for q := range n {
			if q != g {
				out = append(out, gpu.DevOp{Device: g, Op: gpu.WaitPeer{Device: q, Event: r.event(1, n-2, q)}})
			}
		}
	}
	for s := range n - 1 {
		for g := range n {
			prev, c := mod(g-1, n), mod(g-s-1, n)
			if s > 0 {
				out = append(out, gpu.DevOp{Device: g, Op: gpu.WaitPeer{Device: prev, Event: r.event(0, s-1, prev)}})
			}
			in := r.at(prev, c) // v2 reads the other GPU's memory in the kernel
			if v == ringCopy {
				out = append(out, gpu.DevOp{Device: g, Op: gpu.PeerCopy{Dst: r.scratch[g], DstDevice: g, Src: in, SrcDevice: prev, Bytes: bytes}})
				in = r.scratch[g]
			}
			out = append(out,
				gpu.DevOp{Device: g, Op: gpu.Launch{Kernel: r.add, Grid: gpu.Dim(r.blocks), Block: gpu.Dim(256),
					Args: []gpu.Arg{gpu.Ptr(r.at(g, c)), gpu.Ptr(in), gpu.Int64(r.chunk())}}},
				gpu.DevOp{Device: g, Op: gpu.Record{Event: r.event(0, s, g)}})
		}
	}
	for s := range n - 1 {
		for g := range n {
			prev, next, c := mod(g-1, n), mod(g+1, n), mod(g-s, n)
			if s == 0 {
				out = append(out,
					gpu.DevOp{Device: g, Op: gpu.WaitPeer{Device: prev, Event: r.event(0, n-2, prev)}},
					gpu.DevOp{Device: g, Op: gpu.WaitPeer{Device: next, Event: r.event(0, n-2, next)}})
			} else {
				out = append(out, gpu.DevOp{Device: g, Op: gpu.WaitPeer{Device: prev, Event: r.event(1, s-1, prev)}})
			}
			out = append(out,
				gpu.DevOp{Device: g, Op: gpu.PeerCopy{Dst: r.at(g, c), DstDevice: g, Src: r.at(prev, c), SrcDevice: prev, Bytes: bytes}},
				gpu.DevOp{Device: g, Op: gpu.Record{Event: r.event(1, s, g)}})
		}
	}
	return out
}

// newRing allocates a ring of count floats a GPU on every GPU of g and
// loads ring_add on each.
func newRing(env *lessons.Env, g *gpus, count int64) (*ring, error) {
	n := g.n()
	if count%int64(n) != 0 {
		return nil, fmt.Errorf("a ring of %d GPUs needs a count they divide, not %d", n, count)
	}
	r := &ring{n: n, count: count}
	var err error
	if r.data, err = g.allocEach(4 * count); err != nil {
		return nil, err
	}
	if r.scratch, err = g.allocEach(4 * r.chunk()); err != nil {
		return nil, err
	}
	src, err := kernels.Source("multigpu.cu")
	if err != nil {
		return nil, err
	}
	img, err := env.Compile(src)
	if err != nil {
		return nil, err
	}
	for i, d := range g.devs {
		if r.add, err = d.LoadKernel(img, ringAddFn); err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
	}
	info := env.Dev.Info()
	r.blocks = info.SMs * max(1, info.MaxThreadsPerSM/256)
	return r, nil
}

// ringStepBench times both hand-written versions and NCCL's all-reduce
// at each size, on every GPU.
func ringStepBench(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := measuredMulti(env, l, step, "bench", func() ([]lessons.Result, error) { return measureRing(env, l, step, ringSizes) })
	if !ok {
		return err
	}
	return showRing(env, l, step, rs)
}

// measureRing times each version at each size, in turn.
func measureRing(env *lessons.Env, l *lessons.Lesson, step string, sizes []int64) ([]lessons.Result, error) {
	g, err := openGPUs(env, 0)
	if err != nil {
		return nil, err
	}
	defer g.free()
	n := g.n()
	r, err := newRing(env, g, sizes[len(sizes)-1]/4/int64(n)*int64(n))
	if err != nil {
		return nil, err
	}
	versions := ringVersions
	if ok, from, to := g.reachesPrevious(); !ok {
		fmt.Fprintf(env.Out, "%s is not run: GPU %d cannot read GPU %d's memory directly (no peer access between them).\n", ringPeer, from, to)
		versions = slices.DeleteFunc(slices.Clone(versions), func(v string) bool { return v == ringPeer })
	}
	if err := haveNCCL(env); err != nil {
		fmt.Fprintf(env.Out, "%v; the rings run without NCCL's beside them.\n", err)
		versions = slices.DeleteFunc(slices.Clone(versions), func(v string) bool { return v == ncclRing })
	}
	var rs []lessons.Result
	total := len(sizes) * len(versions)
	for i, b := range sizes {
		r.count = b / 4 / int64(n) * int64(n) // chunks of whole floats: a multiple of the GPUs
		nccls := 0.0
		for j, v := range versions {
			progress(env, i*len(versions)+j, total, v+", "+bytesLabel(b))
			steps := r.ops(v)
			if v == ncclRing {
				steps = []gpu.DevOp{{Device: -1, Op: nccl.Collective{Kind: nccl.AllReduce, Devices: n, Send: r.data, Recv: r.data, Count: r.count}}}
			}
			st, per, err := timed(env, gpu.Multi{Devices: n, Steps: steps, Warmup: 3, Reps: reps(b)})
			if err != nil {
				return rs, fmt.Errorf("%s, %s: %w", v, bytesLabel(b), err)
			}
			alg := gbs(b, st.Median)
			bus := alg * nccl.BusFactor(nccl.AllReduce, n)
			res := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: v, Size: bytesLabel(b), Dims: []int{int(b)},
				DType: "float32", Unit: "GB/s", Throughput: bus, Passed: true}.WithTimes(st)
			d := multiDetail{GPUs: n, Bytes: b, AlgBW: alg, BusBW: bus, Steps: len(steps), PerGPU: per}
			if v == ncclRing {
				nccls = bus
			}
			rs = append(rs, env.Record(withDetail(res, d)))
		}
		// Each hand-written version's share of NCCL's, at this size.
		for k := len(rs) - len(versions); k < len(rs) && rs[k].Variant != ncclRing; k++ {
			if d, err := detailOf(rs[k]); err == nil && nccls > 0 {
				d.Ratio, d.Against = rs[k].Throughput/nccls, ncclRing
				rs[k] = env.Record(withDetail(rs[k], d))
			}
		}
	}
	progress(env, total, total, "")
	return rs, nil
}

// showRing prints each version's time and bus bandwidth by size, with the
// hand-written ones' share of NCCL's, and the figure.
func showRing(env *lessons.Env, l *lessons.Lesson, step string, rs []lessons.Result) error {
	by, gpus := byVariant(rs), gpusOf(rs)
	sizes := sortedSizes(rs, "")
	t := &lessons.Table{Headers: []string{"bytes a GPU"}, Right: []bool{true}}
	fig := plots.Lines{Title: fmt.Sprintf("All-reduce on %d GPUs, by hand and by NCCL, %s", gpus, rs[0].GPU),
		Subtitle: lessons.ResultSet{Results: rs}.Source(), XLabel: "bytes a GPU", YLabel: "bus bandwidth (GB/s)", LogX: true}
	for _, v := range ringVersions {
		t.Headers = append(t.Headers, ringColumns[v]+" (µs)", "busbw (GB/s)")
		t.Right = append(t.Right, true, true)
		if v != ncclRing {
			t.Headers = append(t.Headers, ringColumns[v]+" × NCCL")
			t.Right = append(t.Right, true)
		}
		se := plots.Series{Name: v, Baseline: v == ncclRing}
		for _, b := range sizes {
			if r, ok := by[v][b]; ok {
				se.X, se.Y = append(se.X, float64(b)), append(se.Y, r.Throughput)
			}
		}
		fig.Series = append(fig.Series, se)
	}
	for _, b := range sizes {
		row := []string{bytesLabel(int64(b))}
		for _, v := range ringVersions {
			r, ok := by[v][b]
			if !ok {
				row = append(row, "—", "—")
				if v != ncclRing {
					row = append(row, "—")
				}
				continue
			}
			row = append(row, fmt.Sprintf("%.1f", r.MedianMs*1e3), fmt.Sprintf("%.1f", r.Throughput))
			if v != ncclRing {
				ratio := "—"
				if d, err := detailOf(r); err == nil && d.Ratio > 0 {
					ratio = fmt.Sprintf("%.2f", d.Ratio)
				}
				row = append(row, ratio)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes,
		ringCopy+"; "+ringPeer+"; NCCL: ncclAllReduce of the same buffers.",
		"Bus bandwidth as the Collectives step counts an all-reduce's; × NCCL is a version's over NCCL's at the same size, in the same run.",
		env.About(rs))
	env.PrintTable(t)
	return env.Figure(l, step, fig)
}
