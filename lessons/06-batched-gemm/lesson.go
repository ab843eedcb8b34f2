// Package batchedgemm is lesson 6: forty small matrix products as forty
// launches or one, with cuBLAS and with the course's own kernels: what the
// host's calls cost, what running the products one after another costs the
// GPU, and how a batch fills the GPU wave by wave.
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

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// The ways to run a batch, as impls.
const (
	cublasEach    = "cuBLAS, one call each"
	cublasGraph   = "cuBLAS, one call each, from a graph" // the same calls captured once, replayed with one cuGraphLaunch
	cublasBatched = "cuBLAS strided batched"
	cublasTuned   = "cuBLASLt strided batched, tuned"
	kernelEach    = "matmul_v3" // lesson 5's, launched once per product
	kernelStreams = "matmul_v3 on four streams"
	kernelBatched = "matmul_batched_v1" // one launch for the batch
	kernelTiled   = "matmul_batched_v2"
	kernelAsync   = "matmul_batched_v3"
	kernelTMA     = "matmul_batched_v4"
)

// streams is how many streams kernelStreams spreads its launches over.
const streams = 4

// tableBatch is the batch the launch table compares every way at, and
// waveBatches the batches the waves table shows, chosen around one wave
// as matmul_batched_v3's and v4's launch bounds of (128, 5) would have
// it on a GPU of 132 SMs: five blocks an SM make 660 blocks, 41.25
// products of 16 blocks. The Waves step records how many blocks an SM
// holds, as the driver says.
const tableBatch = 40

var waveBatches = []int{40, 41, 42}

// exerciseKernel is the kernel the learner completes.
const exerciseKernel = "matmul_batched_exercise"

func init() {
	var sweep []lessons.Size
	for _, b := range []int{1, 2, 5, 10, 20, 40, 41, 42, 80} {
		sweep = append(sweep, lessons.Size{b, 256, 256, 256})
	}
	batchSizes := &lessons.Sweep{Title: "Batched 256³ GEMMs", XLabel: "products in the batch", Sizes: sweep}
	lessons.Register(lessons.Def{
		Number: 6, Slug: "batched-gemm", Files: files, Kernels: "matmul_batched.cu", Problem: problem(),
		Exercise: &lessons.Exercise{
			File: exerciseKernel + ".cu", Kernel: exerciseKernel, Like: kernelBatched, Bench: lessons.Size{tableBatch, 256, 256, 256},
			Task: "Point A, B and C at the product each block computes, so that one launch runs the whole batch: " +
				"matmul_batched_exercise is launched as matmul_batched_v1 is and checked product by product at every check size.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "batch_from_x.cu", Want: "product 0 of 3: check: C[0,32] = NaN"},
			{File: "b_moves_like_a.cu", Want: "product 1 of 3: check: C["},
			{File: "one_stride.cu", Want: "product 1 of 3: check: C["},
			{File: "c_not_moved.cu", Want: "of 3: check: C["},
		},
		Actions: map[string]lessons.Action{
			"Forty small products":          &lessons.ShowKernel{Names: []string{kernelBatched}},
			"Better tiles, the same launch": &lessons.ShowKernel{Names: []string{kernelTiled, kernelAsync, kernelTMA}},
			"Check":                         &lessons.CheckStep{},
			"Batch sizes":                   batchSizes,
			"One call or forty": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error {
				return launchTable(env, l, batchSizes)
			}},
			"Waves": &lessons.Run{Name: "measure", F: func(env *lessons.Env, l *lessons.Lesson, step string) error {
				return waves(env, l, step, batchSizes)
			}},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

func problem() *lessons.Problem {
	return &lessons.Problem{
		Name: "batched fp32 GEMM", DType: "float32", Unit: "TFLOP/s", Peak: gpu.PeakFP32, Baseline: cublasBatched,
		// No side a multiple of a tile (32 or 64) or of a tile's depth (16
		// or 32). M < N < K at every size, so that a kernel moving to the
		// next product by another matrix's size reads the wrong numbers,
		// and never past its own matrices; and the batch is at least the
		// grid's x extent (⌈N/32⌉), so that one taking the product from
		// blockIdx.x stays inside the batch too.
		CheckSizes: []lessons.Size{{3, 17, 33, 65}, {40, 37, 100, 101}, {5, 30, 36, 44}, {4, 70, 100, 132}, {1, 20, 28, 36}},
		Impls: []lessons.Impl{
			{Name: cublasEach, Summary: "cublasSgemm once per product", Library: true},
			{Name: cublasGraph, Summary: "the same calls captured once into a CUDA graph, replayed with one cuGraphLaunch", Library: true},
			{Name: cublasBatched, Summary: "cublasGemmStridedBatchedEx, one call", Library: true},
			{Name: cublasTuned, Summary: "one cuBLASLt call, with the fastest of the algorithms its heuristics offer for this shape", Library: true},
			{Name: kernelEach, Summary: "the tiled kernel, launched once per product", Block: 1024, File: "matmul.cu"},
			{Name: kernelStreams, Summary: fmt.Sprintf("the same launches, spread in turn over %d streams", streams), Library: true},
			{Name: kernelBatched, Summary: "the tiled kernel with blockIdx.z picking the product, one launch", Block: 1024},
			{Name: kernelTiled, Summary: "matmul_v7's register tiles on 64×64 blocks, one launch", Block: 64, Requires: float4Rows},
			{Name: kernelAsync, Summary: "8×4 outputs a thread, cp.async, three shared-memory stages, one launch", Block: 128, Requires: float4Rows},
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

// tileOf is the side of the square tile of C that a block of the kernel
// impl runs computes: 32 for matmul_v3 and v1, 64 for v2 to v4.
func tileOf(impl string) int {
	switch impl {
	case kernelEach, kernelStreams, kernelBatched:
		return 32
	}
	return 64
}

// hostCalls is how many calls the host makes to run a batch of batch
// products impl's way: a launch or a library call each, or one.
func hostCalls(impl string, batch int) int {
	switch impl {
	case cublasEach, kernelEach, kernelStreams:
		return batch
	}
	return 1
}

// bcase is a batch of products stored back to back.
type bcase struct {
	env        *lessons.Env
	batch      int
	m, n, k    int
	a, b       []float64
	da, db, dc gpu.DevicePtr
	samples    [][]int     // per product: the elements checked (nil: all)
	graphs     []gpu.Graph // captured by Ops, freed with the case
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

// at is the i-th matrix of a batch at p whose matrices are stride floats.
func at(p gpu.DevicePtr, i, stride int) gpu.DevicePtr { return p + gpu.DevicePtr(4*i*stride) }

// calls is the batch as one cuBLAS call per product.
func (c *bcase) calls() []gpu.Op {
	var ops []gpu.Op
	for i := range c.batch {
		ops = append(ops, blas.GEMM{M: c.m, N: c.n, K: c.k, A: at(c.da, i, c.m*c.k), B: at(c.db, i, c.k*c.n), C: at(c.dc, i, c.m*c.n),
			Alpha: 1, Type: gpu.FP32})
	}
	return ops
}

// launches is the batch as one launch of k (matmul_v3) per product.
func (c *bcase) launches(k gpu.Kernel) []gpu.Op {
	var ops []gpu.Op
	for i := range c.batch {
		ops = append(ops, gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, 32), gpu.Blocks(c.m, 32)), Block: gpu.Dim(32, 32),
			Args: []gpu.Arg{gpu.Ptr(at(c.da, i, c.m*c.k)), gpu.Ptr(at(c.db, i, c.k*c.n)), gpu.Ptr(at(c.dc, i, c.m*c.n)),
				gpu.Int32(int32(c.m)), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.k))}})
	}
	return ops
}

// onStreams spreads ops in turn over streams 1 to n, which start after
// what the device's stream has enqueued before them and which it waits
// for after them, so that the timing events around ops see all of it.
func onStreams(ops []gpu.Op, n int) []gpu.Op {
	out := []gpu.Op{gpu.Record{Event: 0}}
	for s := 1; s <= n; s++ {
		out = append(out, gpu.OnStream{Stream: s, Op: gpu.WaitFor{Event: 0}})
	}
	for i, op := range ops {
		out = append(out, gpu.OnStream{Stream: 1 + i%n, Op: op})
	}
	for s := 1; s <= n; s++ {
		out = append(out, gpu.OnStream{Stream: s, Op: gpu.Record{Event: s}}, gpu.WaitFor{Event: s})
	}
	return out
}

// Ops runs the batch the impl's way.
func (c *bcase) Ops(impl lessons.Impl, k gpu.Kernel, _ int) ([]gpu.Op, error) {
	switch impl.Name {
	case cublasEach:
		return c.calls(), nil
	case cublasGraph:
		// The calls run once before they are captured, so that whatever
		// cuBLAS sets up on a first call (a workspace) is not captured.
		if err := c.env.Dev.Run(c.calls()...); err != nil {
			return nil, err
		}
		g, err := c.env.Dev.Capture(c.calls()...)
		if err != nil {
			return nil, err
		}
		c.graphs = append(c.graphs, g)
		return []gpu.Op{gpu.GraphOp{Graph: g}}, nil
	case cublasBatched, cublasTuned:
		return []gpu.Op{blas.GEMM{M: c.m, N: c.n, K: c.k, A: c.da, B: c.db, C: c.dc, Alpha: 1, Type: gpu.FP32,
			Batch: c.batch, StrideA: int64(c.m * c.k), StrideB: int64(c.k * c.n), StrideC: int64(c.m * c.n), Tuned: impl.Name == cublasTuned}}, nil
	case kernelEach:
		return c.launches(k), nil
	case kernelStreams:
		k, err := c.env.FileKernel("matmul.cu", kernelEach)
		if err != nil {
			return nil, err
		}
		return onStreams(c.launches(k), streams), nil
	case kernelBatched:
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, 32), gpu.Blocks(c.m, 32), c.batch), Block: gpu.Dim(32, 32),
			Args: []gpu.Arg{gpu.Ptr(c.da), gpu.Ptr(c.db), gpu.Ptr(c.dc), gpu.Int32(int32(c.m)), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.k))}}}, nil
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
		t := tileOf(impl.Name)
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, t), gpu.Blocks(c.m, t), c.batch), Block: gpu.Dim(impl.Block),
			Args: append(in, gpu.Ptr(c.dc), gpu.Int32(int32(c.m)), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.k)))}}, nil
	}
	return nil, fmt.Errorf("batched GEMM has no variant %q", impl.Name)
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
	for _, g := range c.graphs {
		c.env.Dev.FreeGraph(g)
	}
	c.env.FreeAll(c.da, c.db, c.dc)
}
