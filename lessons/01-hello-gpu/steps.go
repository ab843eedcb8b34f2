package hellogpu

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
)

// deviceTable prints the GPU as the driver describes it.
func deviceTable(env *lessons.Env, l *lessons.Lesson, step string) error {
	info, source, ok := env.Device(l, step)
	if !ok {
		fmt.Fprintf(env.Out, "No GPU here (%v), and no device was recorded.\n", env.NoGPU)
		return nil
	}
	if source != "live" {
		fmt.Fprintf(env.Out, "No GPU here (%v). The GPU the results were recorded on, %s:\n", env.NoGPU, source)
	}
	for _, row := range info.Rows() {
		fmt.Fprintf(env.Out, "  %-24s %s\n", row[0], row[1])
	}
	return nil
}

// whereAmI runs where_am_i, checks what every thread wrote, and shows which
// SM ran each block: on a GPU, what it runs; without one, the run recorded
// with the lesson, where it was launched as this step launches it.
func whereAmI(env *lessons.Env, l *lessons.Lesson, step string) error {
	threads, size := env.Launch()
	rs, err := env.LiveOr(func() ([]lessons.Result, error) {
		return runWhere(env, l, step, threads, size[0])
	}, func() ([]lessons.Result, error) {
		return recordedWhere(env, l, step, threads, size[0]), nil
	})
	if err != nil || len(rs) == 0 {
		return err
	}
	return showWhere(env, rs[0])
}

// whereMap is what a run of where_am_i found, kept as JSON in its
// result's Detail: the SM each block ran on, and the GPU's SM count.
type whereMap struct {
	SMs     []int32 `json:"sms"` // block b ran on SM SMs[b]
	SMCount int     `json:"sm_count"`
}

// runWhere launches where_am_i (the learner's, where they edited it) on n
// threads in blocks of threads, checks every record, and records the
// result: the block→SM map where the check passed, what failed where not.
// It returns no result where the kernel did not run.
func runWhere(env *lessons.Env, l *lessons.Lesson, step string, threads, n int) ([]lessons.Result, error) {
	src, err := kernels.Source("hello.cu")
	if err != nil {
		return nil, err
	}
	k, err := env.Kernel(src, "where_am_i")
	if err != nil {
		return nil, err
	}
	cs, err := env.RunOnce(l.Problem, lessons.Size{n}, lessons.Impl{Name: "where_am_i"}, k, threads)
	if err != nil {
		return nil, err
	}
	defer cs.Free()
	c := cs.(*whereCase)
	blocks := gpu.Blocks(n, threads)
	r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: "where_am_i", Size: fmt.Sprintf("%d×%d threads", blocks, threads),
		Dims: []int{n}, Block: threads, DType: "int32"}
	if _, err := c.Check(); err != nil {
		r.Detail = err.Error()
		return []lessons.Result{env.Record(r)}, err
	}
	m := whereMap{SMCount: env.Dev.Info().SMs}
	for b := range blocks {
		m.SMs = append(m.SMs, c.sms[b*threads])
	}
	detail, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	r.Passed, r.Detail = true, string(detail)
	return []lessons.Result{env.Record(r)}, nil
}

// recordedWhere returns the run of where_am_i recorded for step with this
// launch, having said that it is replayed; none, having said what the
// step does on a GPU, where no such run was recorded.
func recordedWhere(env *lessons.Env, l *lessons.Lesson, step string, threads, n int) []lessons.Result {
	fmt.Fprintf(env.Out, "No GPU here (%v): this step runs where_am_i on %d threads, in blocks of %d, on a GPU; ", env.NoGPU, n, threads)
	for _, r := range l.Recorded().Filter(step, "bench") {
		if r.Block == threads && len(r.Dims) == 1 && r.Dims[0] == n {
			fmt.Fprintf(env.Out, "showing the run %s.\n", lessons.ResultSet{Results: []lessons.Result{r}}.Source())
			return []lessons.Result{r}
		}
	}
	fmt.Fprintf(env.Out, "no such run was recorded.\n")
	return nil
}

// showWhere shows a run of where_am_i: which SM ran each block, and how
// many SMs they were.
func showWhere(env *lessons.Env, r lessons.Result) error {
	if !r.Passed {
		return fmt.Errorf("where_am_i, %s: %s", r.Size, r.Detail)
	}
	var m whereMap
	if err := json.Unmarshal([]byte(r.Detail), &m); err != nil {
		return fmt.Errorf("where_am_i, %s: the block→SM map recorded cannot be read: %w", r.Size, err)
	}
	fmt.Fprintf(env.Out, "block→SM: %s\n", blockMap(m.SMs, 32))
	distinct := map[int32]bool{}
	for _, sm := range m.SMs {
		distinct[sm] = true
	}
	fmt.Fprintf(env.Out, "check: every one of %d threads wrote its own block and index, and nothing past the end. %d blocks ran on %d different SMs of %d.\n",
		r.Dims[0], len(m.SMs), len(distinct), m.SMCount)
	return nil
}

// blockMap writes "block→SM" for the first most blocks of sms (block b
// ran on sms[b]), and how many more there are.
func blockMap(sms []int32, most int) string {
	var parts []string
	for b, sm := range sms[:min(len(sms), most)] {
		parts = append(parts, fmt.Sprintf("%d→%d", b, sm))
	}
	if len(sms) > most {
		parts = append(parts, fmt.Sprintf("… and %d blocks more", len(sms)-most))
	}
	return strings.Join(parts, " ")
}

// hierarchy prints the levels of memory with this GPU's sizes.
func hierarchy(env *lessons.Env, l *lessons.Lesson, step string) error {
	info, source, ok := env.Device(l, step)
	if !ok {
		fmt.Fprintf(env.Out, "No GPU here (%v), and no device was recorded.\n", env.NoGPU)
		return nil
	}
	if source == "live" {
		fmt.Fprintf(env.Out, "%s (live)\n", info.Name)
	} else {
		fmt.Fprintf(env.Out, "%s\n", strings.ToUpper(source[:1])+source[1:]) // names the GPU: "replayed from …"
	}
	writeHierarchy(env, info)
	return nil
}

func writeHierarchy(env *lessons.Env, info gpu.DeviceInfo) {
	kib := func(b int64) string { return fmt.Sprintf("%d KiB", b>>10) }
	rows := [][3]string{
		{"registers", fmt.Sprintf("%s per SM", kib(int64(info.RegsPerSM)*4)), "one thread; at most 255 × 4 B each"},
		{"shared memory", fmt.Sprintf("%s per SM", kib(info.SharedPerSM)), sharedBy(info) + fmt.Sprintf("; up to %s a block", kib(info.SharedPerBlockOptin))},
		{"L1 cache", "the rest of the SM's store", "one SM; shares its storage with shared memory"},
		{"L2 cache", fmt.Sprintf("%.0f MiB", float64(info.L2Bytes)/(1<<20)), "all SMs"},
		{"global memory", fmt.Sprintf("%.1f GiB", float64(info.GlobalMem)/(1<<30)), fmt.Sprintf("all SMs and the host; %s theoretical", gbps(info.PeakBandwidth()))},
	}
	fmt.Fprintf(env.Out, "  %-14s  %-16s  %s\n", "level", "size", "shared by")
	for _, r := range rows {
		fmt.Fprintf(env.Out, "  %-14s  %-16s  %s\n", r[0], r[1], r[2])
	}
	fmt.Fprintf(env.Out, "  %d SMs in all: %.1f MiB of registers and %.1f MiB of shared memory across the GPU.\n",
		info.SMs, float64(int64(info.SMs)*int64(info.RegsPerSM)*4)/(1<<20), float64(int64(info.SMs)*info.SharedPerSM)/(1<<20))
}

// sharedBy says who shares shared memory on the GPU info describes: one
// block; from compute capability 9.0 on, the blocks of a cluster, which
// read one another's (distributed shared memory, lesson 12's softmax_v6).
func sharedBy(info gpu.DeviceInfo) string {
	if info.Major >= 9 {
		return "one block, or a cluster of blocks"
	}
	return "one block"
}

func gbps(bytesPerSecond float64) string {
	if bytesPerSecond == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f GB/s", bytesPerSecond/1e9)
}

// ceilings measures (or replays) the copy and GEMM ceilings.
func ceilings(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, err := env.LiveOr(func() ([]lessons.Result, error) {
		var rs []lessons.Result
		for _, name := range []string{lessons.CeilingCopy, ceilingSGEMM, ceilingHGEMM} {
			r, err := env.Ceiling(name)
			if err != nil {
				return rs, err
			}
			r.Lesson, r.Step = l.Slug, step
			rs = append(rs, env.Record(r))
		}
		return rs, nil
	}, func() ([]lessons.Result, error) {
		rs := l.Recorded().Filter(step, "ceiling")
		if len(rs) == 0 {
			fmt.Fprintf(env.Out, "No GPU here (%v), and no ceilings were recorded.\n", env.NoGPU)
		}
		return rs, nil
	})
	if err != nil || len(rs) == 0 {
		return err
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Unit < rs[j].Unit })
	fmt.Fprintf(env.Out, "Baselines measured %s\n", lessons.ResultSet{Results: rs}.Source())
	for _, r := range rs {
		fmt.Fprintf(env.Out, "  %-26s %-14s %10.1f %-8s (median of %d, %.3f ms)\n", r.Variant, r.Size, r.Throughput, r.Unit, r.Reps, r.MedianMs)
	}
	info, _, ok := env.Device(l, step)
	if !ok {
		return nil
	}
	// Each baseline beside the peak it sits under.
	peaks := map[string]string{"device-to-device copy": gpu.PeakDRAM, "cuBLAS SGEMM fp32 4096³": gpu.PeakFP32, "cuBLAS HGEMM fp16 4096³": gpu.PeakFP16}
	for _, r := range rs {
		rate, how, ok := info.Peak(peaks[r.Variant])
		if !ok {
			continue
		}
		scale := 1e9
		if r.Unit == "TFLOP/s" {
			scale = 1e12
		}
		fmt.Fprintf(env.Out, "  %-26s is %4.1f%% of the peak, %.0f %s (%s)\n", r.Variant, 100*r.Throughput/(rate/scale), rate/scale, r.Unit, how)
	}
	return nil
}
