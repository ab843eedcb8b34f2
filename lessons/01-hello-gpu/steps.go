package hellogpu

import (
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
// SM ran each block.
func whereAmI(env *lessons.Env, l *lessons.Lesson, step string) error {
	threads, size := env.Launch()
	n := size[0]
	src, _ := kernels.Source("hello.cu")
	k, err := env.Kernel(src, "where_am_i")
	if err != nil {
		return err
	}
	cs, err := env.RunOnce(l.Problem, size, lessons.Impl{}, k, threads)
	if err != nil {
		return err
	}
	defer cs.Free()
	c := cs.(*whereCase)
	_, err = c.Check()
	blocks := gpu.Blocks(n, threads)
	r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: "where_am_i", Size: fmt.Sprintf("%d×%d threads", blocks, threads),
		DType: "int32", Block: threads, Passed: err == nil}
	if err != nil {
		r.Detail = err.Error()
	}
	env.Record(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "block→SM: %s\n", blockMap(c.sms, blocks, threads, 32))
	distinct := map[int32]bool{}
	for i := 0; i < n; i += threads {
		distinct[c.sms[i]] = true
	}
	fmt.Fprintf(env.Out, "check: every one of %d threads wrote its own block and index, and nothing past the end. %d blocks ran on %d different SMs of %d.\n",
		n, blocks, len(distinct), env.Dev.Info().SMs)
	return nil
}

// whereAmIReplay says what whereAmI does on a GPU.
func whereAmIReplay(env *lessons.Env, _ *lessons.Lesson, _ string) error {
	threads, size := env.Launch()
	fmt.Fprintf(env.Out, "No GPU here: this step runs where_am_i on %d threads, in blocks of %d, on a GPU.\n", size[0], threads)
	return nil
}

// blockMap writes "block→SM" for the first most blocks, and how many more
// there are.
func blockMap(sms []int32, blocks, threads, most int) string {
	var parts []string
	for b := 0; b < min(blocks, most); b++ {
		parts = append(parts, fmt.Sprintf("%d→%d", b, sms[b*threads]))
	}
	if blocks > most {
		parts = append(parts, fmt.Sprintf("… and %d blocks more", blocks-most))
	}
	return strings.Join(parts, " ")
}

// checkWhere checks what where_am_i wrote and returns each block's SM.
// SM numbers need not run from 0 to the SM count: PTX does not promise
// that %smid is contiguous, so only a negative one (never written) fails.
func checkWhere(block, thread, sm []int32, threads int) ([]int32, error) {
	smOf := make([]int32, (len(block)+threads-1)/threads)
	for i := range block {
		b, t := int32(i/threads), int32(i%threads)
		switch {
		case block[i] != b:
			return nil, fmt.Errorf("check: block[%d] = %d, want %d", i, block[i], b)
		case thread[i] != t:
			return nil, fmt.Errorf("check: thread[%d] = %d, want %d", i, thread[i], t)
		case sm[i] < 0:
			return nil, fmt.Errorf("check: sm[%d] = %d, which no SM is", i, sm[i])
		case t > 0 && sm[i] != smOf[b]:
			return nil, fmt.Errorf("check: thread %d of block %d ran on SM %d, thread 0 on SM %d", t, b, sm[i], smOf[b])
		}
		smOf[b] = sm[i]
	}
	return smOf, nil
}

// hierarchy prints the levels of memory with this GPU's sizes.
func hierarchy(env *lessons.Env, l *lessons.Lesson, step string) error {
	info, source, ok := env.Device(l, step)
	if !ok {
		fmt.Fprintf(env.Out, "No GPU here (%v), and no device was recorded.\n", env.NoGPU)
		return nil
	}
	fmt.Fprintf(env.Out, "%s (%s)\n", info.Name, source)
	writeHierarchy(env, info)
	return nil
}

func writeHierarchy(env *lessons.Env, info gpu.DeviceInfo) {
	kib := func(b int64) string { return fmt.Sprintf("%d KiB", b>>10) }
	rows := [][3]string{
		{"registers", fmt.Sprintf("%s per SM", kib(int64(info.RegsPerSM)*4)), "one thread; at most 255 × 4 B each"},
		{"shared memory", fmt.Sprintf("%s per SM", kib(info.SharedPerSM)), fmt.Sprintf("one block; up to %s each", kib(info.SharedPerBlockOptin))},
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
