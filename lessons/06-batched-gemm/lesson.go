// Package batchedgemm is lesson 6: forty small matrix products as forty
// launches or one, with cuBLAS and with the course's own kernel.
package batchedgemm

import (
	"embed"
	"fmt"
	"math/rand/v2"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md results
var files embed.FS

// The four ways to run a batch, as impls.
const (
	cublasEach    = "cuBLAS, one call each"
	cublasBatched = "cuBLAS strided batched"
	cublasTuned   = "cuBLASLt strided batched, tuned"
	kernelEach    = "matmul_v3"         // lesson 5's, launched once per product
	kernelBatched = "matmul_batched_v1" // one launch for the batch
	kernelTiled   = "matmul_batched_v2"
	kernelAsync   = "matmul_batched_v3"
	kernelTMA     = "matmul_batched_v4"
)

func init() {
	var sweep []lessons.Size
	for _, b := range []int{1, 2, 5, 10, 20, 40, 80} {
		sweep = append(sweep, lessons.Size{b, 256, 256, 256})
	}
	batchSizes := &lessons.Sweep{Title: "Batched 256³ GEMMs", XLabel: "products in the batch", Sizes: sweep}
	lessons.Register(lessons.Def{
		Number: 6, Slug: "batched-gemm", Files: files, Kernels: "matmul_batched.cu", Problem: problem(),
		Actions: map[string]lessons.Action{
			"Forty small products":           &lessons.ShowKernel{Names: []string{kernelBatched}},
			"Small tiles for small products": &lessons.ShowKernel{Names: []string{kernelTiled}},
			"Three tiles in flight":          &lessons.ShowKernel{Names: []string{kernelAsync}},
			"Copies without instructions":    &lessons.ShowKernel{Names: []string{kernelTMA}},
			"Check":                          &lessons.CheckStep{},
			"Batch sizes":                    batchSizes,
			"One call or forty": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error {
				return launchTable(env, l, batchSizes)
			}},
		},
	})
}

func problem() *lessons.Problem {
	return &lessons.Problem{
		Name: "batched fp32 GEMM", DType: "float32", Unit: "TFLOP/s", Peak: gpu.PeakFP32, Baseline: cublasBatched,
		CheckSizes: []lessons.Size{{3, 17, 33, 65}, {40, 100, 101, 37}, {5, 30, 36, 44}, {3, 100, 104, 36}, {1, 70, 68, 40}},
		Impls: []lessons.Impl{
			{Name: cublasEach, Summary: "cublasSgemm once per product", Library: true},
			{Name: cublasBatched, Summary: "cublasGemmStridedBatchedEx, one call", Library: true},
			{Name: cublasTuned, Summary: "one cuBLASLt call, with the fastest of the algorithms its heuristics offer for this shape", Library: true},
			{Name: kernelEach, Summary: "the tiled kernel, launched once per product", Block: 1024, File: "matmul.cu"},
			{Name: kernelBatched, Summary: "the tiled kernel with blockIdx.z picking the product, one launch", Block: 1024},
			{Name: kernelTiled, Summary: "matmul_v7's register tiles on 64×64 blocks, one launch", Block: 64, Requires: float4Rows},
			{Name: kernelAsync, Summary: "cp.async, three shared-memory stages, 8×4 outputs a thread, one launch", Block: 128, Requires: float4Rows},
			{Name: kernelTMA, Summary: "one thread has the TMA copy 32-deep tiles; the loop is FFMA and shared loads only", Block: 128, Requires: float4Rows, Arch: "sm_90a"},
		},
		Setup: setup,
		Memory: func(s lessons.Size) lessons.Memory {
			one := lessons.MatmulMemory(4, 4)(s[1:])
			return lessons.Memory{Device: int64(s[0]) * one.Device, Host: int64(s[0]) * one.Host}
		},
		Work: func(s lessons.Size) float64 { return float64(s[0]) * lessons.MatmulFLOPs(s[1:]) },
		SizeLabel: func(s lessons.Size) string {
			return fmt.Sprintf("%d × %s", s[0], lessons.Size(s[1:]))
		},
	}
}

// float4Rows refuses sizes whose rows of A or B are not whole float4s.
func float4Rows(s lessons.Size) error {
	if s[2]%4 != 0 || s[3]%4 != 0 {
		return fmt.Errorf("needs K and N multiples of 4 (float4 rows), got K=%d N=%d", s[3], s[2])
	}
	return nil
}

// bcase is a batch of products stored back to back.
type bcase struct {
	env        *lessons.Env
	batch      int
	m, n, k    int
	a, b       []float64
	da, db, dc gpu.DevicePtr
	samples    [][]int // per product: the elements checked (nil: all)
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	c := &bcase{env: env, batch: s[0], m: s[1], n: s[2], k: s[3]}
	a32, a := numeric.RandomMatrix(c.batch * c.m * c.k)
	b32, b := numeric.RandomMatrix(c.batch * c.k * c.n)
	c.a, c.b = a, b
	// The whole batch must stay cheap to check: past the budget, sample.
	total := float64(c.batch) * float64(c.m) * float64(c.n) * float64(c.k)
	for range c.batch {
		var idx []int
		if total > numeric.FullCheckMACs {
			for range 64 {
				idx = append(idx, rand.IntN(c.m*c.n))
			}
		}
		c.samples = append(c.samples, idx)
	}
	var err error
	if c.da, c.db, c.dc, err = lessons.UploadPair(env, a32, b32, int64(4*c.batch*c.m*c.n)); err != nil {
		return nil, err
	}
	return c, nil
}

// Ops runs the batch the impl's way.
func (c *bcase) Ops(impl lessons.Impl, k gpu.Kernel, _ int) ([]gpu.Op, error) {
	sa, sb, sc := c.m*c.k, c.k*c.n, c.m*c.n
	at := func(p gpu.DevicePtr, i, stride int) gpu.DevicePtr { return p + gpu.DevicePtr(4*i*stride) }
	dims := []gpu.Arg{gpu.Int32(int32(c.m)), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.k))}
	var ops []gpu.Op
	switch impl.Name {
	case cublasEach:
		for i := range c.batch {
			ops = append(ops, blas.GEMM{M: c.m, N: c.n, K: c.k, A: at(c.da, i, sa), B: at(c.db, i, sb), C: at(c.dc, i, sc), Alpha: 1, Type: gpu.FP32})
		}
	case cublasBatched, cublasTuned:
		ops = append(ops, blas.GEMM{M: c.m, N: c.n, K: c.k, A: c.da, B: c.db, C: c.dc, Alpha: 1, Type: gpu.FP32,
			Batch: c.batch, StrideA: int64(sa), StrideB: int64(sb), StrideC: int64(sc), Tuned: impl.Name == cublasTuned})
	case kernelEach:
		for i := range c.batch {
			ops = append(ops, gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, 32), gpu.Blocks(c.m, 32)), Block: gpu.Dim(32, 32),
				Args: append([]gpu.Arg{gpu.Ptr(at(c.da, i, sa)), gpu.Ptr(at(c.db, i, sb)), gpu.Ptr(at(c.dc, i, sc))}, dims...)})
		}
	case kernelBatched:
		ops = append(ops, gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, 32), gpu.Blocks(c.m, 32), c.batch), Block: gpu.Dim(32, 32),
			Args: append([]gpu.Arg{gpu.Ptr(c.da), gpu.Ptr(c.db), gpu.Ptr(c.dc)}, dims...)})
	case kernelTiled, kernelAsync, kernelTMA:
		in := []gpu.Arg{gpu.Ptr(c.da), gpu.Ptr(c.db)}
		if impl.Name == kernelTMA {
			// One 3-D map per operand: the batch is the third dimension, so a
			// box past a product's last row or column reads zeros, not the next product.
			in = []gpu.Arg{
				gpu.TMap(gpu.TensorMap{Base: c.da, Type: gpu.FP32, Rows: c.m, Cols: c.k, Count: c.batch, BoxRows: 64, BoxCols: 32}),
				gpu.TMap(gpu.TensorMap{Base: c.db, Type: gpu.FP32, Rows: c.k, Cols: c.n, Count: c.batch, BoxRows: 32, BoxCols: 64}),
			}
		}
		ops = append(ops, gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, 64), gpu.Blocks(c.m, 64), c.batch), Block: gpu.Dim(impl.Block),
			Args: append(append(in, gpu.Ptr(c.dc)), dims...)})
	default:
		return nil, fmt.Errorf("batched GEMM has no variant %q", impl.Name)
	}
	return ops, nil
}

func (c *bcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dc, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.batch * c.m * c.n)})
}

// Check compares every product of the batch with its float64 reference.
func (c *bcase) Check() (numeric.CheckStats, error) {
	got, err := gpu.Download[float32](c.env.Dev, c.dc, c.batch*c.m*c.n)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	var worst numeric.CheckStats
	sa, sb, sc := c.m*c.k, c.k*c.n, c.m*c.n
	for i := range c.batch {
		st, err := numeric.MatmulCheck(got[i*sc:(i+1)*sc], c.a[i*sa:(i+1)*sa], c.b[i*sb:(i+1)*sb], c.m, c.n, c.k, c.samples[i], numeric.TolFP32Sum(c.k), false)
		if err != nil {
			return st, fmt.Errorf("product %d of %d: %w", i, c.batch, err)
		}
		if st.MaxRelErr >= worst.MaxRelErr {
			worst = st
		}
	}
	return worst, nil
}

func (c *bcase) Free() {
	c.env.FreeAll(c.da, c.db, c.dc)
}

// launchTable compares the four ways at a batch of 40: launches, time, and
// speed-up over forty cuBLAS calls, from the results of the sweep.
func launchTable(env *lessons.Env, l *lessons.Lesson, sweep *lessons.Sweep) error {
	rs := env.Latest(l, sweep)
	byName := map[string]lessons.Result{}
	var alone *lessons.Result // one cuBLAS call by itself: the batch of 1
	for i, r := range rs {
		if r.Dims[0] == 40 {
			byName[r.Variant] = r
		}
		if r.Dims[0] == 1 && r.Variant == cublasEach {
			alone = &rs[i]
		}
	}
	base, ok := byName[cublasEach]
	if !ok {
		fmt.Fprintln(env.Out, "No results for a batch of 40 yet: run 'bench' first.")
		return nil
	}
	t := &lessons.Table{
		Headers: []string{"way", "launches", "time (µs)", "TFLOP/s", "× faster than 40 cuBLAS calls"},
		Right:   []bool{false, true, true, true, true},
		Notes:   []string{"40 products of 256³, " + env.About(rs)},
	}
	launches := map[string]int{cublasEach: 40, cublasBatched: 1, cublasTuned: 1, kernelEach: 40, kernelBatched: 1, kernelTiled: 1, kernelAsync: 1, kernelTMA: 1}
	for _, im := range l.Problem.Impls {
		r, ok := byName[im.Name]
		if !ok {
			continue
		}
		t.Rows = append(t.Rows, []string{im.Name, fmt.Sprint(launches[im.Name]), fmt.Sprintf("%.1f", 1e3*r.MedianMs),
			fmt.Sprintf("%.2f", r.Throughput), lessons.RatioOf(r, base).Text("%.1f")})
	}
	if alone != nil {
		floor := 40 * alone.MedianMs
		t.Notes = append(t.Notes, fmt.Sprintf("one cuBLAS call alone takes %.1f µs: forty in a row need at least %.0f µs of GPU time however fast the host (%.0f%% of the forty measured)",
			1e3*alone.MedianMs, 1e3*floor, 100*floor/base.MedianMs))
	}
	env.PrintTable(t)
	return nil
}
