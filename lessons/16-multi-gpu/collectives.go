package multigpu

import (
	"fmt"
	"slices"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/nccl"
	"cudarepl/plots"
)

// collectiveKinds are the collectives the lesson times, in table order.
var collectiveKinds = []nccl.Kind{nccl.AllReduce, nccl.AllGather, nccl.ReduceScatter}

// collectiveSizes are the sizes nccl-tests would count (AlgBytes): 4 KiB to 1 GiB.
var collectiveSizes = sizesBy4(4<<10, 1<<30)

// ceilingVariant is the result the Collectives step keeps of the link's
// ceiling it measures beside them: the peer copies both ways at once, at
// the largest size.
const ceilingVariant = "link ceiling: " + wayBoth

// countFor is NCCL's count for a collective of kind k on n GPUs that
// nccl-tests would count as bytes.
func countFor(k nccl.Kind, n int, bytes int64) int64 {
	if k == nccl.AllReduce {
		return bytes / 4
	}
	return bytes / 4 / int64(n)
}

// collectivesStep times every collective on every GPU at every size, and
// the link's ceiling in the same run, and shows the bus bandwidth against
// size beside it.
func collectivesStep(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := measuredMulti(env, l, step, "bench", func() ([]lessons.Result, error) {
		return measureCollectives(env, l, step, collectiveSizes)
	})
	if !ok {
		return err
	}
	return showCollectives(env, l, step, rs)
}

// measureCollectives times the peer copies both ways at the largest size,
// then each collective at each size.
func measureCollectives(env *lessons.Env, l *lessons.Lesson, step string, sizes []int64) ([]lessons.Result, error) {
	g, err := openGPUs(env, 0)
	if err != nil {
		return nil, err
	}
	defer g.free()
	if err := haveNCCL(env); err != nil {
		return nil, err
	}
	n := g.n()
	largest := sizes[len(sizes)-1]
	send, err := g.allocEach(largest)
	if err != nil {
		return nil, err
	}
	recv, err := g.allocEach(largest)
	if err != nil {
		return nil, err
	}
	// The ceiling: GPU 0 and GPU 1 copying to each other at once, the
	// traffic a two-GPU ring's steps make on their link.
	st, per, err := timed(env, gpu.Multi{Devices: 2, Steps: copyOps(wayBoth, largest, send[0], recv[1], recv[0], send[1], 0), Warmup: 3, Reps: reps(largest)})
	if err != nil {
		return nil, fmt.Errorf("the link's ceiling: %w", err)
	}
	ceiling := gbs(largest, st.Median)
	cr := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: ceilingVariant, Size: bytesLabel(largest), Dims: []int{int(largest)},
		DType: "bytes", Unit: "GB/s", Throughput: ceiling, Passed: true}.WithTimes(st)
	rs := []lessons.Result{env.Record(withDetail(cr, multiDetail{GPUs: 2, Bytes: largest, AlgBW: ceiling, PerGPU: per}))}
	total := len(sizes) * len(collectiveKinds)
	for i, b := range sizes {
		for j, k := range collectiveKinds {
			progress(env, i*len(collectiveKinds)+j, total, k.String()+", "+bytesLabel(b))
			c := nccl.Collective{Kind: k, Devices: n, Send: send, Recv: recv, Count: countFor(k, n, b)}
			st, per, err := timed(env, gpu.Multi{Devices: n, Steps: []gpu.DevOp{{Device: -1, Op: c}}, Warmup: 5, Reps: reps(b)})
			if err != nil {
				return rs, fmt.Errorf("%s, %s: %w", k, bytesLabel(b), err)
			}
			alg := gbs(nccl.AlgBytes(k, n, c.Count), st.Median)
			bus := alg * nccl.BusFactor(k, n)
			r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: k.String(), Size: bytesLabel(b), Dims: []int{int(b)},
				DType: "float32", Unit: "GB/s", Throughput: bus, Ceiling: ceiling, CeilingName: wayBoth, Passed: true}.WithTimes(st)
			rs = append(rs, env.Record(withDetail(r, multiDetail{GPUs: n, Bytes: b, AlgBW: alg, BusBW: bus, Ceiling: ceiling,
				Ratio: bus / ceiling, Against: wayBoth, PerGPU: per})))
		}
	}
	progress(env, total, total, "")
	return rs, nil
}

// showCollectives prints each collective's time and bus bandwidth by size,
// the all-reduce's share of the ceiling at the largest, and the figure.
func showCollectives(env *lessons.Env, l *lessons.Lesson, step string, rs []lessons.Result) error {
	var ceiling lessons.Result
	for _, r := range rs {
		if r.Variant == ceilingVariant {
			ceiling = r
		}
	}
	by, gpus := byVariant(rs), gpusOf(rs)
	sizes := sortedSizes(rs, ceilingVariant)
	t := &lessons.Table{Headers: []string{"bytes"}, Right: []bool{true}}
	fig := plots.Lines{Title: fmt.Sprintf("NCCL collectives on %d GPUs, %s", gpus, rs[0].GPU), Subtitle: lessons.ResultSet{Results: rs}.Source(),
		XLabel: "bytes (nccl-tests' size)", YLabel: "bus bandwidth (GB/s)", LogX: true}
	if ceiling.Throughput > 0 {
		fig.Ceilings = []plots.Ceiling{{Name: wayBoth + " (measured)", Value: ceiling.Throughput}}
	}
	for _, k := range collectiveKinds {
		t.Headers = append(t.Headers, k.String()+" (µs)", "algbw", "busbw")
		t.Right = append(t.Right, true, true, true)
		se := plots.Series{Name: k.String()}
		for _, b := range sizes {
			if r, ok := by[k.String()][b]; ok {
				se.X, se.Y = append(se.X, float64(b)), append(se.Y, r.Throughput)
			}
		}
		fig.Series = append(fig.Series, se)
	}
	for _, b := range sizes {
		row := []string{bytesLabel(int64(b))}
		for _, k := range collectiveKinds {
			r, ok := by[k.String()][b]
			d, err := detailOf(r)
			if !ok || err != nil {
				row = append(row, "—", "—", "—")
				continue
			}
			row = append(row, fmt.Sprintf("%.1f", r.MedianMs*1e3), fmt.Sprintf("%.1f", d.AlgBW), fmt.Sprintf("%.1f", r.Throughput))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes,
		"algbw and busbw in GB/s, as nccl-tests counts them: the algorithm bandwidth is the size over the median time; the bus bandwidth is it times 2(n − 1)/n for an all-reduce and (n − 1)/n for the others, n the GPUs.")
	if ceiling.Throughput > 0 && len(sizes) > 0 {
		largest := sizes[len(sizes)-1]
		if ar, ok := by[nccl.AllReduce.String()][largest]; ok {
			t.Notes = append(t.Notes, fmt.Sprintf("At %s the all-reduce's bus bandwidth, %.1f GB/s, is %.2f of the link's ceiling measured in the same run: %.1f GB/s each way with %s.",
				bytesLabel(int64(largest)), ar.Throughput, ar.Throughput/ceiling.Throughput, ceiling.Throughput, wayBoth))
		}
	}
	t.Notes = append(t.Notes, env.About(rs))
	env.PrintTable(t)
	return env.Figure(l, step, fig)
}

// byVariant is rs by variant, then by size (Dims[0]).
func byVariant(rs []lessons.Result) map[string]map[int]lessons.Result {
	by := map[string]map[int]lessons.Result{}
	for _, r := range rs {
		if len(r.Dims) == 0 {
			continue
		}
		if by[r.Variant] == nil {
			by[r.Variant] = map[int]lessons.Result{}
		}
		by[r.Variant][r.Dims[0]] = r
	}
	return by
}

// gpusOf is how many GPUs the results rs were measured on.
func gpusOf(rs []lessons.Result) int {
	gpus := 0
	for _, r := range rs {
		if d, err := detailOf(r); err == nil && d.GPUs > 0 {
			gpus = d.GPUs
		}
	}
	return gpus
}

// sortedSizes is the sizes (Dims[0]) of rs but those of variant skip,
// each once, smallest first.
func sortedSizes(rs []lessons.Result, skip string) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range rs {
		if r.Variant == skip || len(r.Dims) == 0 || seen[r.Dims[0]] {
			continue
		}
		seen[r.Dims[0]] = true
		out = append(out, r.Dims[0])
	}
	slices.Sort(out)
	return out
}
