package matmul

import (
	"fmt"
	"slices"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// mcase is one product on the GPU, with its inputs kept for the reference.
type mcase struct {
	env     *lessons.Env
	m, n, k int
	a, b    []float64
	da, db  gpu.DevicePtr
	dc      gpu.DevicePtr
	sample  []int
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	m, n, k := s[0], s[1], s[2]
	c := &mcase{env: env, m: m, n: n, k: k, sample: numeric.MatmulSample(m, n, k)}
	a32, a := numeric.RandomMatrix(m * k)
	b32, b := numeric.RandomMatrix(k * n)
	c.a, c.b = a, b
	var err error
	if c.da, c.db, c.dc, err = lessons.UploadPair(env, a32, b32, int64(4*m*n)); err != nil {
		return nil, err
	}
	return c, nil
}

// Ops launches impl with the grid its tile needs, or calls cuBLAS.
func (c *mcase) Ops(impl lessons.Impl, k gpu.Kernel, _ int) ([]gpu.Op, error) {
	args := []gpu.Arg{gpu.Ptr(c.da), gpu.Ptr(c.db), gpu.Ptr(c.dc), gpu.Int32(int32(c.m)), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.k))}
	launch := func(grid, block gpu.Dim3) []gpu.Op {
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: grid, Block: block, Args: args}}
	}
	switch impl.Name {
	case "cuBLAS":
		return []gpu.Op{blas.GEMM{M: c.m, N: c.n, K: c.k, A: c.da, B: c.db, C: c.dc, Alpha: 1, Type: gpu.FP32}}, nil
	case "matmul_v1":
		return launch(gpu.Dim(gpu.Blocks(c.m, 32), gpu.Blocks(c.n, 32)), gpu.Dim(32, 32)), nil
	case "matmul_v2", "matmul_v3":
		return launch(gpu.Dim(gpu.Blocks(c.n, 32), gpu.Blocks(c.m, 32)), gpu.Dim(32, 32)), nil
	case "matmul_v4":
		return launch(gpu.Dim(gpu.Blocks(c.n, 64), gpu.Blocks(c.m, 64)), gpu.Dim(512)), nil
	case "matmul_v5", "matmul_v6", "matmul_v7":
		return launch(gpu.Dim(gpu.Blocks(c.n, 128), gpu.Blocks(c.m, 128)), gpu.Dim(256)), nil
	}
	if slices.Contains(v7Steps, impl.Name) { // the steps from v6 to v7 launch as v7 does
		return launch(gpu.Dim(gpu.Blocks(c.n, 128), gpu.Blocks(c.m, 128)), gpu.Dim(256)), nil
	}
	return nil, fmt.Errorf("fp32 matmul has no variant %q", impl.Name)
}

func (c *mcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dc, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.m * c.n)})
}

// Check compares C with a float64 product of the same inputs: every element,
// or a sample of them for products too big to redo on the CPU.
func (c *mcase) Check() (numeric.CheckStats, error) {
	got, err := gpu.Download[float32](c.env.Dev, c.dc, c.m*c.n)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	return numeric.MatmulCheck(got, c.a, c.b, c.m, c.n, c.k, c.sample, numeric.TolFP32Sum(c.k), false)
}

func (c *mcase) Free() {
	c.env.FreeAll(c.da, c.db, c.dc)
}

// shape is what a version's code asks of memory, for the traffic table.
type shape struct {
	bm, bn int // the outputs of a block's tile; 1×1 for the untiled versions
	// warp is, for an untiled version, the 32-byte sectors its warp's loads
	// of A and B touch at each step of k, for the warp's 32 outputs.
	warp float64
	// shared and loads are the bytes each thread reads from shared memory
	// for every multiply-add, and the load instructions it reads them with,
	// as the kernel's code reads them.
	shared, loads float64
}

// shapes are the ladder's versions, by name.
var shapes = map[string]shape{
	"matmul_v1": {1, 1, 32 + 1, 0, 0},           // 32 rows of A, a sector each; one float of B, the same for all 32 lanes
	"matmul_v2": {1, 1, 1 + 4, 0, 0},            // one float of A for all 32 lanes; 32 consecutive floats of B, 4 sectors
	"matmul_v3": {32, 32, 0, 8, 2},              // As[ty][k] and Bs[k][tx] for each multiply-add
	"matmul_v4": {64, 64, 0, 36.0 / 8, 9.0 / 8}, // one float of B and 8 of A for 8 multiply-adds
	"matmul_v5": {128, 128, 0, 1, 16.0 / 64},    // 8 floats of A and 8 of B for 64
	"matmul_v6": {128, 128, 0, 1, 4.0 / 64},     // the same 16 floats, as four float4s
	"matmul_v7": {128, 128, 0, 1, 4.0 / 64},
}

// requested is the global memory a version's loads ask for per output at
// depth k, in bytes, counted in the 32-byte sectors its warps' loads
// touch: for a tile of bm×bn outputs, a row of bm floats of A and a column
// of bn of B each step of k, whole sectors; for an untiled version, the
// sectors of its warp.
func (sh shape) requested(k int) float64 {
	if sh.warp > 0 {
		return sh.warp * float64(k) // each sector's 32 bytes serve the warp's 32 outputs: a byte each
	}
	return 4 * float64(k) * (1/float64(sh.bm) + 1/float64(sh.bn))
}

// sectorsMetric is Nsight Compute's count of the 32-byte sectors global
// loads touched.
const sectorsMetric = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"

// traffic prints, for each version of the ladder, the global memory its
// loads ask for per output at K = 4096 beside what Nsight Compute counted,
// the shared memory each multiply-add reads, and its rate in the ladder.
func traffic(env *lessons.Env, l *lessons.Lesson, ladder *lessons.Sweep) error {
	const k = 4096
	t := &lessons.Table{
		Headers: []string{"version", "tile", "global B/output", "Nsight Compute", "shared B/FMA", "loads/FMA", "TFLOP/s at 4096³", "% of cuBLAS"},
		Right:   []bool{false, true, true, true, true, true, true, true},
	}
	rs := env.Latest(l, ladder)
	by := map[string]lessons.Result{}
	for _, r := range rs {
		if r.Dims[0] == k {
			by[r.Variant] = r
		}
	}
	profiles := env.Results.Filter(ladderStep, "profile")
	if len(profiles) == 0 {
		profiles = l.Recorded().Filter(ladderStep, "profile")
	}
	counted := map[string]float64{} // bytes an output, from the sectors counted
	for _, r := range profiles {
		if len(r.Dims) == 3 && r.Dims[2] == k {
			for _, kn := range r.Kernels {
				if v, ok := kn.Get(sectorsMetric); ok {
					counted[r.Variant] += 32 * v / float64(r.Dims[0]*r.Dims[1])
				}
			}
		}
	}
	for _, im := range l.Problem.Impls {
		sh, ok := shapes[im.Name]
		if !ok {
			continue
		}
		rate, share, seen, shared, loads := "—", "—", "—", "—", "—"
		if r := by[im.Name]; r.Throughput > 0 {
			rate = fmt.Sprintf("%.1f", r.Throughput)
			share = lessons.RatioOf(r, by[cublas]).Times(100).Text("%.1f")
		}
		if b, ok := counted[im.Name]; ok {
			seen = fmt.Sprintf("%.0f B", b)
		}
		if sh.shared > 0 {
			shared, loads = fmt.Sprintf("%.3g B", sh.shared), fmt.Sprintf("%.3g", sh.loads)
		}
		t.Rows = append(t.Rows, []string{im.Name, fmt.Sprintf("%d×%d", sh.bm, sh.bn), fmt.Sprintf("%.0f B", sh.requested(k)), seen, shared, loads, rate, share})
	}
	t.Notes = append(t.Notes, "global B/output: what the loads ask for, in the 32-byte sectors they touch; Nsight Compute: the sectors its counter found, × 32 B ÷ outputs",
		"shared B/FMA and loads/FMA: what each thread reads from shared memory for a multiply-add, and in how many load instructions, as its code is written")
	if len(counted) > 0 {
		t.Notes = append(t.Notes, "counted: "+env.About(profiles))
	}
	if len(rs) > 0 {
		t.Notes = append(t.Notes, "rates: "+env.About(rs))
	} else {
		t.Notes = append(t.Notes, "rates: run 'bench' to measure them")
	}
	env.PrintTable(t)
	return nil
}
