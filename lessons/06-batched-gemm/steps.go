package batchedgemm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// batchResults indexes a sweep's measured results by batch size and way.
type batchResults map[int]map[string]lessons.Result

func byBatch(rs []lessons.Result) batchResults {
	out := batchResults{}
	for _, r := range rs {
		if !r.Measured() || len(r.Dims) == 0 {
			continue
		}
		if out[r.Dims[0]] == nil {
			out[r.Dims[0]] = map[string]lessons.Result{}
		}
		out[r.Dims[0]][r.Variant] = r
	}
	return out
}

// µs is r's median time in microseconds.
func µs(r lessons.Result) float64 { return 1e3 * r.MedianMs }

// launchTable shows the batch of tableBatch every way, from the sweep's
// results: host calls, time, time a product, and how many times faster
// than the cuBLAS calls made one by one and than the same calls replayed
// from a graph. Its notes say what the sweep shows of the host's share.
func launchTable(env *lessons.Env, l *lessons.Lesson, sweep *lessons.Sweep) error {
	rs := env.Latest(l, sweep)
	t, ok := launchRows(l.Problem.Impls, byBatch(rs))
	if !ok {
		fmt.Fprintf(env.Out, "No results for a batch of %d yet: run 'bench' first.\n", tableBatch)
		return nil
	}
	t.Notes = append([]string{fmt.Sprintf("%d products of 256³, %s", tableBatch, env.About(rs))}, t.Notes...)
	env.PrintTable(t)
	return nil
}

// launchRows is the launch table of the ways impls at tableBatch, and the
// notes the results allow; ok is false without the calls made one by one.
func launchRows(impls []lessons.Impl, at batchResults) (t *lessons.Table, ok bool) {
	base, ok := at[tableBatch][cublasEach]
	if !ok {
		return nil, false
	}
	graph, hasGraph := at[tableBatch][cublasGraph]
	t = &lessons.Table{
		Headers: []string{"way", "host calls", "time (µs)", "µs a product", fmt.Sprintf("× faster than %d calls", tableBatch)},
		Right:   []bool{false, true, true, true, true},
	}
	if hasGraph {
		t.Headers, t.Right = append(t.Headers, "× faster than the graph"), append(t.Right, true)
	}
	for _, im := range impls {
		r, ok := at[tableBatch][im.Name]
		if !ok {
			continue
		}
		row := []string{im.Name, fmt.Sprint(hostCalls(im.Name, tableBatch)), fmt.Sprintf("%.1f", µs(r)),
			fmt.Sprintf("%.2f", µs(r)/tableBatch), lessons.RatioOf(r, base).Text("%.1f")}
		if hasGraph {
			row = append(row, lessons.RatioOf(r, graph).Text("%.1f"))
		}
		t.Rows = append(t.Rows, row)
	}
	if hasGraph {
		t.Notes = append(t.Notes, fmt.Sprintf("the %d cuBLAS calls: %.1f µs made one by one, %.1f µs replayed from a graph, which the host starts with one call: "+
			"%.2f µs a call more one by one", tableBatch, µs(base), µs(graph), (µs(base)-µs(graph))/tableBatch))
	}
	var lo, hi float64
	var from, to int
	for _, b := range slices.Sorted(maps.Keys(at)) {
		r, ok := at[b][cublasEach]
		if !ok || b < 2 {
			continue
		}
		per := µs(r) / float64(b)
		if from == 0 || per < lo {
			lo = per
		}
		if from == 0 || per > hi {
			hi = per
		}
		if from == 0 {
			from = b
		}
		to = b
	}
	if from != 0 && from != to {
		t.Notes = append(t.Notes, fmt.Sprintf("%s, across the sweep's batches of %d to %d: %.1f to %.1f µs a call", cublasEach, from, to, lo, hi))
	}
	alone, ok1 := at[1][kernelEach]
	forty, ok2 := at[tableBatch][kernelEach]
	if ok1 && ok2 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s: %.1f µs launched alone; %d in a row %.1f µs, %.2f µs a launch (%d × %.1f would be %.1f)",
			kernelEach, µs(alone), tableBatch, µs(forty), µs(forty)/tableBatch, tableBatch, µs(alone), tableBatch*µs(alone)))
	}
	return t, true
}

// occupancy is what the driver said of one of the lesson's kernels: how
// many of its blocks one SM holds at once, on a GPU of SMs SMs. It is kept
// as JSON in the Detail of the kernel's result.
type occupancy struct {
	BlocksPerSM int `json:"blocks_per_sm"`
	SMs         int `json:"sms"`
}

// wave is how many blocks of the kernel the whole GPU holds at once.
func (o occupancy) wave() int { return o.BlocksPerSM * o.SMs }

// waveKernels are the kernels the Waves step asks the driver about: the
// one-launch kernels, and matmul_v3, whose launches the four streams share.
var waveKernels = []string{kernelEach, kernelBatched, kernelTiled, kernelAsync, kernelTMA}

// waves asks the driver how many blocks of each of waveKernels an SM
// holds, records it, and shows where the sweep's batches around tableBatch
// fall against the resulting waves, with their times.
func waves(env *lessons.Env, l *lessons.Lesson, step string, sweep *lessons.Sweep) error {
	rs, ok, err := env.Measured(l, step, func() ([]lessons.Result, error) { return measureOccupancy(env, l, step) })
	if err != nil || !ok {
		return err
	}
	occ := map[string]occupancy{}
	for _, r := range rs {
		var o occupancy
		if err := json.Unmarshal([]byte(r.Detail), &o); err != nil {
			return fmt.Errorf("batched-gemm: %s's occupancy, as recorded: %w", r.Variant, err)
		}
		occ[r.Variant] = o
	}
	t := waveRows(occ, byBatch(env.Latest(l, sweep)))
	t.Notes = append(t.Notes, "blocks/SM: cuOccupancyMaxActiveBlocksPerMultiprocessor, "+env.About(rs)+"; times: the sweep's, "+env.About(env.Latest(l, sweep)))
	env.PrintTable(t)
	return nil
}

// measureOccupancy asks the driver how many blocks of each of waveKernels
// fit on an SM, and records a result for each; a kernel this GPU cannot
// run is left out, saying why.
func measureOccupancy(env *lessons.Env, l *lessons.Lesson, step string) ([]lessons.Result, error) {
	info := env.Dev.Info()
	var rs []lessons.Result
	for _, im := range l.Problem.Impls {
		if !slices.Contains(waveKernels, im.Name) {
			continue
		}
		if im.Arch != "" && info.FeatureArch(info.NVRTCVersion) != im.Arch {
			fmt.Fprintf(env.Out, "%s needs %s; this GPU compiles for %s.\n", im.Name, im.Arch, info.FeatureArch(info.NVRTCVersion))
			continue
		}
		file := im.File
		if file == "" {
			file = l.Kernels
		}
		k, err := env.FileKernel(file, im.Name)
		if err != nil {
			return rs, err
		}
		n, err := env.Dev.Occupancy(k, im.Block, 0)
		if err != nil {
			return rs, err
		}
		b, err := json.Marshal(occupancy{BlocksPerSM: n, SMs: info.SMs})
		if err != nil {
			return rs, err
		}
		rs = append(rs, env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: im.Name, DType: "float32",
			Block: im.Block, Detail: string(b)}))
	}
	return rs, nil
}

// waveRows is the waves table: for each one-launch kernel in occ, its
// blocks a 256³ product, the blocks an SM holds, the products a wave
// holds, and at each of waveBatches the sweep's time and the waves the
// batch's blocks make; matmul_v3 gets a note, since its launches hold one
// product each.
func waveRows(occ map[string]occupancy, at batchResults) *lessons.Table {
	t := &lessons.Table{
		Headers: []string{"kernel", "blocks a product", "blocks/SM", "products a wave"},
		Right:   []bool{false, true, true, true},
	}
	for _, b := range waveBatches {
		t.Headers = append(t.Headers, fmt.Sprintf("%d: µs (waves)", b))
		t.Right = append(t.Right, true)
	}
	for _, name := range waveKernels {
		o, ok := occ[name]
		if !ok || o.wave() == 0 {
			continue
		}
		per := perProduct(name)
		if name == kernelEach {
			t.Notes = append(t.Notes, fmt.Sprintf("%s holds one product a launch: %d blocks, %d an SM, so a launch fills %.2f of a wave and %d launches at once %.2f",
				name, per, o.BlocksPerSM, float64(per)/float64(o.wave()), streams, float64(streams*per)/float64(o.wave())))
			continue
		}
		row := []string{name, fmt.Sprint(per), fmt.Sprint(o.BlocksPerSM), fmt.Sprintf("%.2f", float64(o.wave())/float64(per))}
		for _, b := range waveBatches {
			cell := "—"
			if r, ok := at[b][name]; ok {
				cell = fmt.Sprintf("%.1f (%.2f)", µs(r), float64(b*per)/float64(o.wave()))
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// perProduct is how many blocks the kernel impl launches for one 256³
// product.
func perProduct(impl string) int {
	n := gpu.Blocks(256, tileOf(impl))
	return n * n
}
