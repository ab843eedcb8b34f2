package matmul

import (
	"encoding/json"
	"fmt"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// compiled is what NVRTC made of one fp32 kernel, kept as JSON in its
// result's Detail.
type compiled struct {
	NVRTC, Arch string
	Registers   int   // a thread
	Shared      int64 // static shared memory a block, in bytes
}

// occupancy shows what NVRTC made of each fp32 kernel: its registers a
// thread and shared memory a block, and how many of its blocks one SM
// holds for each, and for its threads, with the warps that makes. Live it
// compiles them with this GPU's NVRTC and records what it found, with
// the GPU's limits; in replay it shows what was recorded, and where
// nothing was, what this machine's NVRTC makes of them.
func occupancy(env *lessons.Env, l *lessons.Lesson, step string) error {
	info, source, ok := env.Device(l, step)
	rs, err := env.LiveOr(func() ([]lessons.Result, error) { return compileAll(env, l, step, env.Record) },
		func() ([]lessons.Result, error) {
			if rs := l.Recorded().Filter(step, "bench"); len(rs) > 0 {
				return rs, nil
			}
			return compileAll(env, l, step, func(r lessons.Result) lessons.Result { return r })
		})
	if err != nil || len(rs) == 0 {
		return err
	}
	t := &lessons.Table{
		Headers: []string{"kernel", "threads", "registers", "shared B", "blocks/SM by registers", "by shared B", "by threads", "warps/SM"},
		Right:   []bool{false, true, true, true, true, true, true, true},
	}
	var c compiled // the last one read, which names the compiler in the notes
	for _, r := range rs {
		c = compiled{}
		if err := json.Unmarshal([]byte(r.Detail), &c); err != nil {
			return fmt.Errorf("matmul: %s's compile, as recorded: %w", r.Variant, err)
		}
		row := []string{r.Variant, fmt.Sprint(r.Block), fmt.Sprint(c.Registers), fmt.Sprintf("%d B", c.Shared), "—", "—", "—", "—"}
		if ok {
			f := fits(info, c.Registers, c.Shared, r.Block)
			row[4], row[5], row[6] = fmt.Sprint(f.registers), fmt.Sprint(f.shared), fmt.Sprint(f.threads)
			row[7] = fmt.Sprint(min(f.registers, f.shared, f.threads) * ((r.Block + 31) / 32))
		}
		t.Rows = append(t.Rows, row)
	}
	if rs[0].Mode == "" {
		t.Notes = append(t.Notes, fmt.Sprintf("Compiled here by NVRTC %s for %s (nothing was recorded on a GPU).", c.NVRTC, c.Arch))
	} else {
		t.Notes = append(t.Notes, fmt.Sprintf("Compiled by NVRTC %s for %s, %s.", c.NVRTC, c.Arch, env.About(rs)))
	}
	if ok {
		t.Notes = append(t.Notes, fmt.Sprintf("blocks/SM: as many as %s's %d registers, %d B of shared memory (%d B more taken for each block) and %d threads an SM allow, at most %d (%s); warps/SM: the least of the three, times the block's warps, of the SM's %d.",
			info.Name, info.RegsPerSM, info.SharedPerSM, info.ReservedSharedPerBlock, info.MaxThreadsPerSM, info.MaxBlocksPerSM, source, info.MaxThreadsPerSM/32))
	} else {
		t.Notes = append(t.Notes, "blocks/SM needs a GPU's limits: none here, and none were recorded.")
	}
	env.PrintTable(t)
	return nil
}

// compileAll compiles the lesson's fp32 kernels with the NVRTC here and
// returns a result for each, passed through keep (Env.Record, to record
// them); none, having said why, where there is no NVRTC.
func compileAll(env *lessons.Env, l *lessons.Lesson, step string, keep func(lessons.Result) lessons.Result) ([]lessons.Result, error) {
	img, _, here, err := env.CompileHere(l, "")
	if !here {
		return nil, err
	}
	var rs []lessons.Result
	for _, im := range l.Problem.Impls {
		if im.Library {
			continue
		}
		k, found := img.Kernel(im.Name)
		if !found {
			return nil, fmt.Errorf("matmul: NVRTC reported nothing for %s", im.Name)
		}
		b, err := json.Marshal(compiled{NVRTC: img.NVRTC, Arch: img.Arch, Registers: k.Registers, Shared: k.SharedStatic})
		if err != nil {
			return nil, err
		}
		rs = append(rs, keep(lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: im.Name, DType: "float32", Block: im.Block, Detail: string(b)}))
	}
	return rs, nil
}

// fit is how many blocks of a kernel one SM holds, by each of the three
// limits.
type fit struct{ registers, shared, threads int }

// fits is how many blocks of block threads, each thread using regs
// registers and each block shared bytes of shared memory, one SM of info
// holds, by each limit, none above the SM's most blocks. Registers are
// handed out a warp at a time in units of 256 (8 a thread), as the CUDA
// occupancy calculator counts them; each block's shared memory takes the
// reserved share beside it.
func fits(info gpu.DeviceInfo, regs int, shared int64, block int) fit {
	warps := (block + 31) / 32
	f := fit{registers: info.MaxBlocksPerSM, shared: info.MaxBlocksPerSM, threads: min(info.MaxBlocksPerSM, info.MaxThreadsPerSM/block)}
	if perWarp := (regs*32 + 255) / 256 * 256; perWarp > 0 {
		f.registers = min(f.registers, info.RegsPerSM/(perWarp*warps))
	}
	if need := shared + info.ReservedSharedPerBlock; need > 0 {
		f.shared = min(f.shared, int(info.SharedPerSM/need))
	}
	return f
}
