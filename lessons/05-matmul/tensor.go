package matmul

import (
	"fmt"
	"math/rand/v2"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// tensorProblem is C = A·B with fp16 inputs and output and fp32
// accumulation, on tensor cores: matmul_tc.cu's versions and cuBLAS.
func tensorProblem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "fp16 matmul (tensor cores)", DType: "float16", Unit: "TFLOP/s", Ceiling: lessons.CeilingHGEMM,
		Kernels:    "matmul_tc.cu",
		CheckSizes: []lessons.Size{{16, 8, 16}, {17, 33, 65}, {1000, 1003, 517}, {1000, 1000, 520}},
		Setup:      setupHalf,
		Work:       lessons.MatmulFLOPs,
	}
	for _, im := range lessons.LadderImpls(p.Kernels) {
		im.Block = 256
		if im.Name == "matmul_tc_v2" {
			im.Requires = multiplesOf(8, "16-byte copies")
		}
		p.Impls = append(p.Impls, im)
	}
	p.Impls = append(p.Impls, lessons.Impl{Name: "cuBLAS fp16", Summary: "cublasGemmEx, fp16 in and out, fp32 accumulation", Library: true})
	return p
}

// hcase is an fp16 product on the GPU; a and b keep the inputs as rounded.
type hcase struct {
	env     *lessons.Env
	m, n, k int
	a, b    []float64
	da, db  gpu.DevicePtr
	dc      gpu.DevicePtr
	sample  []int
}

func setupHalf(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	m, n, k := s[0], s[1], s[2]
	c := &hcase{env: env, m: m, n: n, k: k, a: make([]float64, m*k), b: make([]float64, k*n), sample: lessons.MatmulSample(m, n, k)}
	round := func(dst []float64) []uint16 {
		h := make([]uint16, len(dst))
		for i := range h {
			h[i] = gpu.Float16Bits(rand.Float32()*2 - 1)
			dst[i] = float64(gpu.Float16From(h[i]))
		}
		return h
	}
	var err error
	if c.da, err = gpu.Upload(env.Dev, round(c.a)); err != nil {
		return nil, err
	}
	if c.db, err = gpu.Upload(env.Dev, round(c.b)); err != nil {
		c.Free()
		return nil, err
	}
	// Whole 32-bit words, so that Poison's word fill stays inside.
	if c.dc, err = env.Dev.Alloc(int64(4 * ((m*n + 1) / 2))); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

func (c *hcase) Ops(impl lessons.Impl, k gpu.Kernel, _ int) ([]gpu.Op, error) {
	args := []gpu.Arg{gpu.Ptr(c.da), gpu.Ptr(c.db), gpu.Ptr(c.dc), gpu.Int32(int32(c.m)), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.k))}
	switch impl.Name {
	case "cuBLAS fp16":
		return []gpu.Op{gpu.GEMM{M: c.m, N: c.n, K: c.k, A: c.da, B: c.db, C: c.dc, Alpha: 1, Type: gpu.FP16, OutType: gpu.FP16, Compute: gpu.Compute32F}}, nil
	case "matmul_tc_v1":
		warps := gpu.Blocks(c.m, 16) * gpu.Blocks(c.n, 8)
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(warps, 8)), Block: gpu.Dim(256), Args: args}}, nil
	case "matmul_tc_v2":
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, 128), gpu.Blocks(c.m, 128)), Block: gpu.Dim(256), Args: args}}, nil
	}
	return nil, fmt.Errorf("fp16 matmul has no variant %q", impl.Name)
}

// Poison fills C with fp16 NaNs.
func (c *hcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dc, Value: 0x7e007e00, Count: int64((c.m*c.n + 1) / 2)})
}

// Check compares C, rounded to fp16, with a float64 product of the rounded
// inputs, as a whole: ‖out − ref‖/‖ref‖ ≤ 10⁻², no element unwritten.
func (c *hcase) Check() (lessons.CheckStats, error) {
	h, err := gpu.Download[uint16](c.env.Dev, c.dc, c.m*c.n)
	if err != nil {
		return lessons.CheckStats{}, err
	}
	got := make([]float32, len(h))
	for i, v := range h {
		got[i] = gpu.Float16From(v)
	}
	return lessons.MatmulCheck(got, c.a, c.b, c.m, c.n, c.k, c.sample, lessons.TolHalf, true)
}

func (c *hcase) Footprint() int64 { return int64(2 * (c.m*c.k + c.k*c.n + c.m*c.n)) }

func (c *hcase) Free() {
	c.env.FreeAll(c.da, c.db, c.dc)
}
