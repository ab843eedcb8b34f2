package multigpu

import (
	"fmt"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/plots"
)

// The ways the Peer copies step moves bytes from GPU 0 to GPU 1.
const (
	wayPeer     = "peer copy, GPU 0 → GPU 1"
	wayBoth     = "peer copies both ways at once, each way"
	wayHost     = "through pinned host memory"
	wayOnDevice = "GPU 0 to itself (device → device)"
)

// copyWays are the ways, in the order of the table's columns.
var copyWays = []string{wayPeer, wayBoth, wayHost, wayOnDevice}

// copyColumns are the ways' short names, for the table's columns.
var copyColumns = map[string]string{wayPeer: "peer 0 → 1", wayBoth: "both ways, each", wayHost: "through host", wayOnDevice: "on GPU 0"}

// copySizes are the sizes copied: 4 KiB to 1 GiB.
var copySizes = sizesBy4(4<<10, 1<<30)

// copyOps is what one run of way enqueues, moving bytes from src (on GPU 0)
// to dst (on GPU 1); back is a buffer on GPU 0 and from one on GPU 1, for
// the way back, and host a pinned buffer.
func copyOps(way string, bytes int64, src, dst, back, from gpu.DevicePtr, host gpu.HostPtr) []gpu.DevOp {
	switch way {
	case wayPeer:
		return []gpu.DevOp{{Device: 1, Op: gpu.PeerCopy{Dst: dst, DstDevice: 1, Src: src, SrcDevice: 0, Bytes: bytes}}}
	case wayBoth:
		return []gpu.DevOp{
			{Device: 1, Op: gpu.PeerCopy{Dst: dst, DstDevice: 1, Src: src, SrcDevice: 0, Bytes: bytes}},
			{Device: 0, Op: gpu.PeerCopy{Dst: back, DstDevice: 0, Src: from, SrcDevice: 1, Bytes: bytes}},
		}
	case wayHost:
		// GPU 1 waits for GPU 0's copy out before it copies in.
		return []gpu.DevOp{
			{Device: 0, Op: gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(host), Src: uint64(src), Bytes: bytes}},
			{Device: 0, Op: gpu.Record{Event: 1}},
			{Device: 1, Op: gpu.WaitPeer{Device: 0, Event: 1}},
			{Device: 1, Op: gpu.Copy{Kind: gpu.HostToDevice, Dst: uint64(dst), Src: uint64(host), Bytes: bytes}},
		}
	}
	return []gpu.DevOp{{Device: 0, Op: gpu.Copy{Kind: gpu.DeviceToDevice, Dst: uint64(back), Src: uint64(src), Bytes: bytes}}}
}

// copiesStep times each way at each size and shows GB/s against size.
func copiesStep(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := measuredMulti(env, l, step, "bench", func() ([]lessons.Result, error) { return measureCopies(env, l, step, copySizes) })
	if !ok {
		return err
	}
	return showCopies(env, l, step, rs)
}

// measureCopies times every way at every size on GPUs 0 and 1.
func measureCopies(env *lessons.Env, l *lessons.Lesson, step string, sizes []int64) ([]lessons.Result, error) {
	g, err := openGPUs(env, 2)
	if err != nil {
		return nil, err
	}
	defer g.free()
	largest := sizes[len(sizes)-1]
	src, err := g.alloc(0, largest)
	if err != nil {
		return nil, err
	}
	back, err := g.alloc(0, largest)
	if err != nil {
		return nil, err
	}
	dst, err := g.alloc(1, largest)
	if err != nil {
		return nil, err
	}
	from, err := g.alloc(1, largest)
	if err != nil {
		return nil, err
	}
	host, err := g.allocHost(largest)
	if err != nil {
		return nil, err
	}
	var rs []lessons.Result
	total := len(sizes) * len(copyWays)
	for i, b := range sizes {
		for j, way := range copyWays {
			progress(env, i*len(copyWays)+j, total, way+", "+bytesLabel(b))
			st, per, err := timed(env, gpu.Multi{Devices: 2, Steps: copyOps(way, b, src, dst, back, from, host), Warmup: 3, Reps: reps(b)})
			if err != nil {
				return rs, fmt.Errorf("%s, %s: %w", way, bytesLabel(b), err)
			}
			r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: way, Size: bytesLabel(b), Dims: []int{int(b)},
				DType: "bytes", Unit: "GB/s", Throughput: gbs(b, st.Median), Passed: true}.WithTimes(st)
			rs = append(rs, env.Record(withDetail(r, multiDetail{GPUs: 2, Bytes: b, AlgBW: r.Throughput, PerGPU: per})))
		}
	}
	progress(env, total, total, "")
	return rs, nil
}

// showCopies prints a row a size and a column a way, and draws GB/s
// against size.
func showCopies(env *lessons.Env, l *lessons.Lesson, step string, rs []lessons.Result) error {
	by := byVariant(rs)
	sizes := sortedSizes(rs, "")
	t := &lessons.Table{Headers: []string{"bytes"}, Right: []bool{true}}
	fig := plots.Lines{Title: "Copies between two GPUs, " + rs[0].GPU, Subtitle: lessons.ResultSet{Results: rs}.Source(),
		XLabel: "bytes copied", YLabel: "GB/s (each way)", LogX: true}
	for _, way := range copyWays {
		t.Headers = append(t.Headers, copyColumns[way]+" (GB/s)")
		t.Right = append(t.Right, true)
		se := plots.Series{Name: way, Baseline: way == wayOnDevice}
		for _, b := range sizes {
			if r, ok := by[way][b]; ok {
				se.X, se.Y = append(se.X, float64(b)), append(se.Y, r.Throughput)
			}
		}
		fig.Series = append(fig.Series, se)
	}
	for _, b := range sizes {
		row := []string{bytesLabel(int64(b))}
		for _, way := range copyWays {
			if r, ok := by[way][b]; ok {
				row = append(row, fmt.Sprintf("%.1f", r.Throughput))
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes,
		"Peer 0 → 1: "+wayPeer+"; both ways, each: "+wayBoth+"; through host: GPU 0 → pinned host memory → GPU 1; on GPU 0: "+wayOnDevice+".",
		"GB/s is the bytes copied one way over the median time; both ways at once moves that many bytes in each direction.",
		fmt.Sprintf("Each point the median of its runs (%d at 256 MiB and up, 30 below), timed by CUDA events on each GPU.", reps(1<<30)),
		env.About(rs))
	env.PrintTable(t)
	return env.Figure(l, step, fig)
}
