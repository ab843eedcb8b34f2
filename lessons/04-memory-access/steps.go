package memaccess

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// dt is the time step the particles advance by.
const dt = 0.01

// pcase is n particles, as an array of structs and as a struct of arrays.
type pcase struct {
	env     *lessons.Env
	n       int
	aos     gpu.DevicePtr // n × {x, y, z, vx, vy, vz}
	x, vx   gpu.DevicePtr // the same x and vx as arrays
	xo      gpu.DevicePtr // x + vx·dt, and a guard
	want    []float64
	touched bool
}

func setupParticles(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	n := s[0]
	fields := numeric.RandomFloats(6*n, uint64(n))
	c := &pcase{env: env, n: n, want: make([]float64, n)}
	x, vx := make([]float32, n), make([]float32, n)
	for i := range n {
		x[i], vx[i] = fields[6*i], fields[6*i+3]
		c.want[i] = float64(x[i]) + float64(vx[i])*dt
	}
	var err error
	for _, up := range []struct {
		p *gpu.DevicePtr
		v []float32
	}{{&c.aos, fields}, {&c.x, x}, {&c.vx, vx}} {
		if *up.p, err = gpu.Upload(env.Dev, up.v); err != nil {
			c.Free()
			return nil, err
		}
	}
	if c.xo, err = env.Dev.Alloc(4 * int64(n+guardElems)); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// Ops launches a thread a particle.
func (c *pcase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	var args []gpu.Arg
	switch impl.Name {
	case "advance_aos":
		args = []gpu.Arg{gpu.Ptr(c.aos), gpu.Ptr(c.xo), gpu.Int32(int32(c.n)), gpu.Float32(dt)}
	case "advance_soa":
		args = []gpu.Arg{gpu.Ptr(c.x), gpu.Ptr(c.vx), gpu.Ptr(c.xo), gpu.Int32(int32(c.n)), gpu.Float32(dt)}
	default:
		return nil, errors.New("x + vx·dt has no variant " + impl.Name)
	}
	return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, block)), Block: gpu.Dim(block), Args: args}}, nil
}

func (c *pcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.xo, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.n + guardElems)})
}

// Check compares x' with x + vx·dt in float64, then checks that nothing
// was written past n.
func (c *pcase) Check() (numeric.CheckStats, error) {
	got, err := gpu.Download[float32](c.env.Dev, c.xo, c.n+guardElems)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	st, err := numeric.Compare("x'", got[:c.n], c.want, []int{c.n}, numeric.TolFP32)
	if err != nil {
		return st, err
	}
	return st, numeric.PastTheEnd("x'", got[c.n:], c.n)
}

func (c *pcase) Free() { c.env.FreeAll(c.aos, c.x, c.vx, c.xo) }

// block is the block the copies are launched with, whose occupancy the
// compiler's table works out.
const block = 256

// compiled shows what NVRTC made of each copy: its registers and spills,
// the global loads and stores in its PTX (the read-only .nc loads that
// __restrict__ on a const pointer allows among them), and how many of its
// blocks an SM holds for its registers. Live it compiles them and records
// what it found, with the GPU's limits; in replay it shows what was
// recorded on the lesson's GPU, and where nothing was, what this
// machine's NVRTC makes of them.
func compiled(env *lessons.Env, l *lessons.Lesson, step string) error {
	info, source, ok := env.Device(l, step)
	rs, err := env.LiveOr(func() ([]lessons.Result, error) { return compileCopies(env, l, step, env.Record) },
		func() ([]lessons.Result, error) {
			if rs := l.Recorded().Filter(step, "bench"); len(rs) > 0 {
				return rs, nil
			}
			return compileCopies(env, l, step, func(r lessons.Result) lessons.Result { return r })
		})
	if err != nil || len(rs) == 0 {
		return err
	}
	t := &lessons.Table{
		Headers: []string{"kernel", "registers", "spilled", "PTX loads", "of them .nc", "PTX stores", "blocks/SM"},
		Right:   []bool{false, true, true, true, true, true, true},
	}
	var row compiledRow // the last one read, which names the compiler in the notes
	for _, r := range rs {
		row = compiledRow{}
		if err := json.Unmarshal([]byte(r.Detail), &row); err != nil {
			return fmt.Errorf("memory-access: %s's compile, as recorded: %w", r.Variant, err)
		}
		fit := "—"
		if ok {
			fit = fmt.Sprint(BlocksPerSM(info, row.Registers, block))
		}
		t.Rows = append(t.Rows, []string{r.Variant, fmt.Sprint(row.Registers), fmt.Sprintf("%d B", row.Spilled),
			fmt.Sprint(row.Loads), fmt.Sprint(row.NC), fmt.Sprint(row.Stores), fit})
	}
	if rs[0].Mode == "" {
		t.Notes = append(t.Notes, fmt.Sprintf("Compiled here by NVRTC %s for %s; blocks of %d threads (nothing was recorded on a GPU).", row.NVRTC, row.Arch, block))
	} else {
		t.Notes = append(t.Notes, fmt.Sprintf("Compiled by NVRTC %s for %s, %s; blocks of %d threads.", row.NVRTC, row.Arch, env.About(rs), block))
	}
	if ok {
		t.Notes = append(t.Notes, fmt.Sprintf("blocks/SM: as many as %s's %d registers an SM, %d threads an SM and %d blocks an SM allow (%s).",
			info.Name, info.RegsPerSM, info.MaxThreadsPerSM, info.MaxBlocksPerSM, source))
	} else {
		t.Notes = append(t.Notes, "blocks/SM needs a GPU's limits: none here, and none were recorded.")
	}
	env.PrintTable(t)
	return nil
}

// compiledRow is what NVRTC made of one copy, kept as JSON in its
// result's Detail.
type compiledRow struct {
	NVRTC, Arch       string
	Registers         int
	Spilled           int64 // bytes of spill stores
	Loads, NC, Stores int   // global loads, of them ld.global.nc, and stores in the PTX
}

// compileCopies compiles the lesson's kernels with the NVRTC here and
// returns a result for each copy, passed through keep (Env.Record, to
// record them); none, having said why, where there is no NVRTC.
func compileCopies(env *lessons.Env, l *lessons.Lesson, step string, keep func(lessons.Result) lessons.Result) ([]lessons.Result, error) {
	img, _, compiledHere, err := env.CompileHere(l, "")
	if !compiledHere {
		return nil, err
	}
	var rs []lessons.Result
	for _, name := range copyKernels {
		k, found := img.Kernel(name)
		if !found {
			return nil, fmt.Errorf("memory-access: NVRTC reported nothing for %s", name)
		}
		row := compiledRow{NVRTC: img.NVRTC, Arch: img.Arch, Registers: k.Registers, Spilled: k.SpillStores}
		row.Loads, row.NC, row.Stores = ptxAccesses(img.PTX, name)
		b, err := json.Marshal(row)
		if err != nil {
			return nil, err
		}
		rs = append(rs, keep(lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: name, DType: "float32", Block: block, Detail: string(b)}))
	}
	return rs, nil
}

// BlocksPerSM is how many blocks of block threads, each thread using regs
// registers, one SM of info holds at once, when nothing but registers and
// threads limit it: registers are handed out a warp at a time, in units of
// 256 (8 a thread), as the CUDA occupancy calculator counts them.
func BlocksPerSM(info gpu.DeviceInfo, regs, block int) int {
	warps := (block + 31) / 32
	perWarp := (regs*32 + 255) / 256 * 256
	n := min(info.MaxThreadsPerSM/block, info.MaxBlocksPerSM)
	if perWarp > 0 {
		n = min(n, info.RegsPerSM/perWarp/warps)
	}
	return n
}

// ptxAccesses counts the global loads and stores in kernel name's PTX,
// and how many of the loads go through the read-only path (ld.global.nc).
func ptxAccesses(ptx, name string) (loads, nc, stores int) {
	_, body, found := strings.Cut(ptx, ".entry "+name+"(")
	if !found {
		return 0, 0, 0
	}
	if end := strings.Index(body, ".entry "); end >= 0 {
		body = body[:end]
	}
	for _, line := range strings.Split(body, "\n") {
		op, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		op, _, _ = strings.Cut(op, "\t")
		switch {
		case strings.HasPrefix(op, "ld.global.nc"):
			loads++
			nc++
		case strings.HasPrefix(op, "ld.global"):
			loads++
		case strings.HasPrefix(op, "st.global"):
			stores++
		}
	}
	return loads, nc, stores
}
