package matmul

import (
	"fmt"

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

// traffic prints the predicted global-memory bytes per output of each
// version at K = 4096, beside its rate in the fp32 ladder and the
// tensor-core sweep where they have one.
func traffic(env *lessons.Env, l *lessons.Lesson, ladder, tensorCores *lessons.Sweep) error {
	const k = 4096
	t := &lessons.Table{
		Headers: []string{"version", "tile", "bytes read per output", "TFLOP/s at 4096³", "% of cuBLAS"},
		Right:   []bool{false, true, true, true, true},
	}
	// rates returns a step's results at 4096³ by variant, and the library's.
	rates := func(sweep *lessons.Sweep, library string) (map[string]lessons.Result, lessons.Result, []lessons.Result) {
		rs := env.Latest(l, sweep)
		by := map[string]lessons.Result{}
		for _, r := range rs {
			if r.Dims[0] == k {
				by[r.Variant] = r
			}
		}
		return by, by[library], rs
	}
	row := func(name string, tile [2]int, bytes float64, rate, lib lessons.Result) {
		r, share := "—", "—"
		if rate.Throughput > 0 {
			r = fmt.Sprintf("%.1f", rate.Throughput)
			share = lessons.RatioOf(rate, lib).Times(100).Text("%.1f")
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprintf("%d×%d", tile[0], tile[1]), fmt.Sprintf("%.0f B", bytes), r, share})
	}
	fp32, lib32, rs := rates(ladder, "cuBLAS")
	for _, im := range l.Problem.Impls {
		tile, ok := tiles[im.Name]
		if !ok {
			continue
		}
		bytes := 4 * float64(k) * (1/float64(tile[0]) + 1/float64(tile[1]))
		if im.Name == "matmul_v1" {
			bytes = 4*k*8 + 4*k // each 32-byte sector of A carries one useful float; B is broadcast
		}
		row(im.Name, tile, bytes, fp32[im.Name], lib32)
	}
	// Tensor cores, fp16: two bytes per element; % of cuBLAS fp16.
	fp16, lib16, rs16 := rates(tensorCores, "cuBLAS fp16")
	for _, v := range []struct {
		name string
		tile [2]int
	}{{"matmul_tc_v1", [2]int{16, 16}}, {"matmul_tc_v2", [2]int{128, 128}}, {"matmul_tc_v3", [2]int{128, 256}}} {
		row(v.name+" (fp16)", v.tile, 2*float64(k)*(1/float64(v.tile[0])+1/float64(v.tile[1])), fp16[v.name], lib16)
	}
	if len(rs)+len(rs16) > 0 {
		t.Notes = append(t.Notes, "rates: "+env.About(append(rs, rs16...))+"; tensor-core rows against cuBLAS fp16")
	} else {
		t.Notes = append(t.Notes, "rates: run 'bench' to measure them")
	}
	env.PrintTable(t)
	return nil
}
