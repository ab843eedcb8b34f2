package matmul

import (
	"fmt"
	"math/rand/v2"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// tcGrouped is matmul_tc_v3 taking its tiles in groups of tile rows, the
// one thing it changes: the step "Tile order, timed" times it against
// matmul_tc_v3, and "Tile-order counters" shows its DRAM bytes.
const tcGrouped = "matmul_tc_v3_grouped"

// tensorProblem is C = A·B with fp16 (or bf16) inputs and output and fp32
// accumulation, on tensor cores: matmul_tc.cu's versions, v3 in grouped
// tile order, and cuBLAS. The bf16 problem runs the best version only,
// matmul_tc_v3_bf16.
func tensorProblem(bf16 bool) *lessons.Problem {
	p := &lessons.Problem{
		Name: "fp16 matmul (tensor cores)", DType: "float16", Unit: "TFLOP/s", Peak: gpu.PeakFP16, Baseline: "cuBLAS fp16",
		Kernels:    tcFile,
		CheckSizes: []lessons.Size{{16, 8, 16}, {17, 33, 65}, {24, 40, 72}, {1000, 1003, 517}, {1000, 1000, 520}},
		Setup:      func(env *lessons.Env, s lessons.Size) (lessons.Case, error) { return setupHalf(env, s, bf16) },
		Memory:     lessons.MatmulMemory(2, 2),
		Work:       lessons.MatmulFLOPs,
		Bytes:      lessons.MatmulBytes(2, 2),
	}
	impls := lessons.LadderImpls(p.Kernels)
	if bf16 {
		p.Name, p.DType, p.Peak, p.Baseline = "bf16 matmul (tensor cores)", "bfloat16", gpu.PeakBF16, "cuBLAS bf16"
		impls = []lessons.Impl{{Name: "matmul_tc_v3_bf16", Summary: "matmul_tc_v3 with bf16 inputs and output"}}
	} else {
		impls = append(impls, lessons.Impl{Name: tcGrouped, Summary: summary(tcFile, tcGrouped)})
		// 17 rows of v3's 128-row tiles and 3 columns of its 256-column
		// ones, the last of each partial, and K past one 64-deep tile: the
		// grouped order's two groups, the second of one row, every element
		// checked.
		p.CheckSizes = append(p.CheckSizes, lessons.Size{2100, 600, 72})
	}
	for _, im := range impls {
		im.Block = 256
		switch im.Name {
		case "matmul_tc_v1":
			im.Block = 128
		case "matmul_tc_v2":
			im.Requires = multiplesOf(8, "16-byte copies")
		case "matmul_tc_v3", tcGrouped, "matmul_tc_v3_bf16":
			im.Block, im.Arch = 384, "sm_90a"
			im.Requires = multiplesOf(8, "TMA's 16-byte rows")
		}
		p.Impls = append(p.Impls, im)
	}
	lib := lessons.Impl{Name: cublasFP16, Summary: "cublasGemmEx, fp16 in and out, fp32 accumulation", Library: true}
	if bf16 {
		lib = lessons.Impl{Name: "cuBLAS bf16", Summary: "cublasGemmEx, bf16 in and out, fp32 accumulation", Library: true}
	}
	p.Impls = append(p.Impls, lib)
	return p
}

// hcase is an fp16 or bf16 product on the GPU; a and b keep the inputs as
// rounded.
type hcase struct {
	env     *lessons.Env
	bf16    bool
	m, n, k int
	a, b    []float64
	da, db  gpu.DevicePtr
	dc      gpu.DevicePtr
	sample  []int
}

// v3's shape: 128×256 tiles of C, TMA boxes of 128×64 (A) and 64×64 (B),
// four stages of both, plus barriers and room to align to 1024 bytes.
const (
	tcV3BM, tcV3BN, tcV3BK = 128, 256, 64
	tcV3Shared             = 4*(tcV3BM*tcV3BK+tcV3BK*tcV3BN)*2 + 64 + 1024
)

func setupHalf(env *lessons.Env, s lessons.Size, bf16 bool) (lessons.Case, error) {
	m, n, k := s[0], s[1], s[2]
	c := &hcase{env: env, bf16: bf16, m: m, n: n, k: k, a: make([]float64, m*k), b: make([]float64, k*n), sample: numeric.MatmulSample(m, n, k)}
	round := func(dst []float64) []uint16 {
		h := make([]uint16, len(dst))
		for i := range h {
			h[i] = c.bits(rand.Float32()*2 - 1)
			dst[i] = float64(c.from(h[i]))
		}
		return h
	}
	var err error
	// C in whole 32-bit words, so that Poison's word fill stays inside.
	if c.da, c.db, c.dc, err = lessons.UploadPair(env, round(c.a), round(c.b), int64(4*((m*n+1)/2))); err != nil {
		return nil, err
	}
	return c, nil
}

// bits rounds f to the case's 16-bit type.
func (c *hcase) bits(f float32) uint16 {
	if c.bf16 {
		return gpu.BFloat16Bits(f)
	}
	return gpu.Float16Bits(f)
}

// from widens a 16-bit value of the case's type.
func (c *hcase) from(h uint16) float32 {
	if c.bf16 {
		return gpu.BFloat16From(h)
	}
	return gpu.Float16From(h)
}

func (c *hcase) Ops(impl lessons.Impl, k gpu.Kernel, _ int) ([]gpu.Op, error) {
	args := []gpu.Arg{gpu.Ptr(c.da), gpu.Ptr(c.db), gpu.Ptr(c.dc), gpu.Int32(int32(c.m)), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.k))}
	dt := gpu.FP16
	if c.bf16 {
		dt = gpu.BF16
	}
	switch impl.Name {
	case cublasFP16, "cuBLAS bf16":
		return []gpu.Op{blas.GEMM{M: c.m, N: c.n, K: c.k, A: c.da, B: c.db, C: c.dc, Alpha: 1, Type: dt, OutType: dt, Compute: blas.Compute32F}}, nil
	case "matmul_tc_v1":
		tiles := gpu.Blocks(c.m, 16) * gpu.Blocks(c.n, 16)
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(tiles, 4)), Block: gpu.Dim(128), Args: args}}, nil
	case "matmul_tc_v2":
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, 128), gpu.Blocks(c.m, 128)), Block: gpu.Dim(256), Args: args}}, nil
	case "matmul_tc_v3", tcGrouped, "matmul_tc_v3_bf16": // one grid: the grouped kernel maps a block to its tile itself
		mapA := gpu.TensorMap{Base: c.da, Type: dt, Rows: c.m, Cols: c.k, BoxRows: tcV3BM, BoxCols: tcV3BK, Swizzle128: true}
		mapB := gpu.TensorMap{Base: c.db, Type: dt, Rows: c.k, Cols: c.n, BoxRows: tcV3BK, BoxCols: 64, Swizzle128: true}
		args = append([]gpu.Arg{gpu.TMap(mapA), gpu.TMap(mapB)}, args[2:]...)
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, tcV3BN), gpu.Blocks(c.m, tcV3BM)), Block: gpu.Dim(384),
			Shared: tcV3Shared, Args: args}}, nil
	}
	return nil, fmt.Errorf("%s matmul has no variant %q", dt, impl.Name)
}

// Poison fills C with fp16 NaNs.
func (c *hcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dc, Value: 0x7e007e00, Count: int64((c.m*c.n + 1) / 2)})
}

// Check compares C, rounded to fp16, with a float64 product of the rounded
// inputs, as a whole: ‖out − ref‖/‖ref‖ ≤ 10⁻², no element unwritten.
func (c *hcase) Check() (numeric.CheckStats, error) {
	h, err := gpu.Download[uint16](c.env.Dev, c.dc, c.m*c.n)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	got := make([]float32, len(h))
	for i, v := range h {
		got[i] = c.from(v)
	}
	return numeric.MatmulCheck(got, c.a, c.b, c.m, c.n, c.k, c.sample, numeric.TolHalf, true)
}

func (c *hcase) Free() {
	c.env.FreeAll(c.da, c.db, c.dc)
}
