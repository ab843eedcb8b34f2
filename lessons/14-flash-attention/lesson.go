// Package flashattention is lesson 14: attention in one kernel, the S×S
// scores never written, from a thread per query in fp32 to tensor cores,
// against cuDNN's fused attention.
package flashattention

import (
	"embed"
	"errors"
	"slices"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/lessons/attn"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// The library impl, and the shape the lesson measures, with S swept.
const (
	cudnnName              = "cuDNN SDPA"
	chainName              = "chain (lesson 13)"
	benchB, benchH, benchD = 4, 16, 64
	v1Block, v1MaxD        = 64, 64
	v2Threads, v2Keys      = 128, 64
	flashTol               = numeric.TolHalf
	v2RowPad               = 8        // halves of padding per shared-memory row
	v3Threads, v3Rows      = 512, 192 // a producer warpgroup and 3 consumers of 64 queries
	v3Keys, v3Stages       = 128, 3
	v3Align                = 1024
	errNotCausalV1         = "v1 is the plain idea: not causal"
	errHeadDim             = "d must be 64 or 128"
	errV1HeadDim           = "v1 holds a query's row and its output in registers: d ≤ 64"
	errStepHeadDim         = "the steps from v1 to v2 are written for d = 64"
	kernelFile             = "flash_attention.cu"
)

// v2Steps are the kernels between v1 and v2, each changing one thing of
// the one before it; v2 changes one more.
var v2Steps = []string{"flash_v2a_mma", "flash_v2b_ldmatrix", "flash_v2c_async", "flash_v2d_two_tiles"}

// v2Shapes are the kernels of flash_v2_tile's family at d = 64: the tiles
// of 16 queries each of their 4 warps takes, and the stages of K and V
// they keep in shared memory. At d = 128 flash_v2's twin runs, one tile a
// warp, two stages.
var v2Shapes = map[string]struct{ tiles, stages int }{
	"flash_v2a_mma": {1, 1}, "flash_v2b_ldmatrix": {1, 1}, "flash_v2c_async": {1, 2}, "flash_v2d_two_tiles": {2, 2}, "flash_v2": {2, 2},
}

// compared are the versions and baselines the sweeps over S time: the
// lesson's three versions, cuDNN and lesson 13's chain.
var compared = []string{"flash_v1", "flash_v2", "flash_v3", cudnnName, chainName}

func init() {
	var sizes []lessons.Size
	for _, s := range []int{512, 1024, 2048, 4096, 8192, 16384, 32768} {
		sizes = append(sizes, lessons.Size{benchB, benchH, s, benchD})
	}
	var wide, causal []lessons.Size
	for _, s := range []int{1024, 4096, 16384} {
		wide = append(wide, lessons.Size{benchB, benchH, s, 128})
		causal = append(causal, lessons.Size{benchB, benchH, s, benchD, 1})
	}
	// The sweep against cuDNN, profiled at S = 4096: the profile step
	// shows its counters.
	against := &lessons.Sweep{Title: "Attention forward, fp16, non-causal", XLabel: "sequence length S (B=4, H=16, d=64)",
		Impls: compared, Sizes: sizes, XDim: 2, Memory: true, Extra: true, ExtraLabel: "beyond Q, K and V",
		ProfileSizes: []lessons.Size{{benchB, benchH, 4096, benchD}}}
	// The steps from v1 to v2 at one size, in interleaved rounds, each as
	// a share of cuDNN's speed. Its step runs it as a measurement: replay
	// shows what was recorded for it, or says that nothing was.
	steps := &lessons.Sweep{Title: "Attention forward, fp16, from v1 to v2", XLabel: "sequence length S (B=4, H=16, d=64)",
		Impls: slices.Concat([]string{"flash_v1"}, v2Steps, []string{"flash_v2", cudnnName}),
		Sizes: []lessons.Size{{benchB, benchH, 4096, benchD}}, XDim: 2, Ladder: true}
	lessons.Register(lessons.Def{
		Number: 14, Slug: "flash-attention", Files: files, Kernels: kernelFile, Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "flash_exercise.cu", Kernel: "flash_exercise", Like: "flash_v1",
			Task: "Write the online-softmax update for each key (the new max, the rescaled running sum and output) and the final division. " +
				"Then write it again in flash_exercise_causal, for queries whose keys so far were all masked, and judge that with " +
				"'check FILE --variant flash_exercise_causal --like flash_v1_causal'.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "racecheck"},
			{File: "sum_not_rescaled.cu", Want: "check: O["},
			{File: "output_not_rescaled.cu", Want: "check: O["},
			{File: "no_division.cu", Want: "check: O["},
			{File: "max_from_zero.cu", Want: "not finite"},
			{File: "tail_unmasked.cu", Want: "check: O["},
			{File: "exp_old_max.cu", Want: "not finite"},
			{File: "corr_after_update.cu", Want: "check: O["},
			{File: "solution_causal.cu", Like: "flash_v1_causal"},
			{File: "masked_rows_nan.cu", Like: "flash_v1_causal", Want: "not finite"},
		},
		Actions: map[string]lessons.Action{
			"A thread per query":   &lessons.ShowKernel{Names: []string{"flash_v1"}},
			"Tensor cores":         &lessons.ShowKernel{Names: []string{"flash_v2"}},
			"One change at a time": &lessons.Run{Name: "measure", F: steps.Do},
			"Hopper":               &lessons.ShowKernel{Names: []string{"flash_v3"}},
			"Check":                &lessons.CheckStep{},
			"Against cuDNN":        against,
			"Counted by the profiler": &lessons.ProfileStep{Of: against, Impls: []string{"flash_v2", "flash_v3", cudnnName},
				Columns: []string{lessons.ColTime, lessons.ColPredicted, lessons.ColInstructions, lessons.ColTensor,
					lessons.ColOccupancy, lessons.ColLimiter, lessons.ColStalls}},
			"Head dimension 128": &lessons.Sweep{Title: "Attention forward, fp16, d = 128", XLabel: "sequence length S (B=4, H=16, d=128)",
				Impls: compared, Sizes: wide, XDim: 2},
			"Causal": &lessons.Sweep{Title: "Causal attention forward, fp16", XLabel: "sequence length S (B=4, H=16, d=64, causal)",
				Impls: compared, Sizes: causal, XDim: 2},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

func problem() *lessons.Problem {
	var impls []lessons.Impl
	for _, im := range lessons.LadderImpls(kernelFile) {
		switch im.Name {
		case "flash_v1":
			im.Block = v1Block
			im.Requires = func(s lessons.Size) error {
				a := attn.Of(s)
				switch {
				case a.Causal:
					return errors.New(errNotCausalV1)
				case a.D > v1MaxD:
					return errors.New(errV1HeadDim)
				}
				return nil
			}
			// v1 made causal, the exercise's second part, judged like it;
			// then the steps from v1 to v2.
			impls = append(impls, im, lessons.Impl{Name: "flash_v1_causal", Summary: summary("flash_v1_causal"), Block: 2 * v1Block,
				Requires: func(s lessons.Size) error {
					if attn.Of(s).D > v1MaxD {
						return errors.New(errV1HeadDim)
					}
					return nil
				}})
			for _, name := range v2Steps {
				impls = append(impls, lessons.Impl{Name: name, Summary: summary(name), Block: v2Threads, Requires: func(s lessons.Size) error {
					if attn.Of(s).D != 64 {
						return errors.New(errStepHeadDim)
					}
					return nil
				}})
			}
			continue
		case "flash_v2":
			im.Block = v2Threads
			im.Requires = headDim
			im.Summary += " (at d = 128 its twin flash_v2_d128 runs: a kernel of its own, for the registers)"
		case "flash_v3":
			im.Block, im.Arch = v3Threads, "sm_90a"
			im.Requires = headDim
			im.Summary += " (at d = 128 its twin flash_v3_d128 runs)"
		}
		impls = append(impls, im)
	}
	impls = append(impls, lessons.Impl{Name: cudnnName, Library: true,
		Summary:  "cuDNN's scaled dot-product attention operation (9.13 and newer), one fused kernel chosen by its heuristics; causal, the same attention as a graph of operations with the mask in it, which cuDNN fuses the same way",
		Requires: headDim},
		lessons.Impl{Name: chainName, Library: true, Extra: attn.ChainExtra,
			Summary: "lesson 13's chain: cuBLAS Q·Kᵀ, scale_h, causal_mask_h when causal, softmax_h, cuBLAS P·V, the S×S scores in memory between them"})
	return &lessons.Problem{
		Name: "flash attention (fp16)", DType: "float16", Unit: "TFLOP/s", Peak: gpu.PeakFP16,
		CheckSizes: []lessons.Size{
			{1, 4, 1, 64}, {1, 4, 3, 64, 1}, {2, 2, 100, 64}, {1, 4, 100, 64, 1}, {1, 4, 257, 64}, {2, 4, 257, 64, 1},
			{1, 4, 1000, 64}, {1, 4, 1000, 64, 1},
			{1, 4, 1, 128, 1}, {1, 4, 3, 128}, {1, 4, 100, 128, 1}, {2, 2, 257, 128}, {1, 4, 1000, 128}, {1, 4, 1000, 128, 1},
		},
		Impls:     impls,
		Setup:     setup,
		Memory:    memory,
		Work:      attn.FLOPs,
		Bytes:     attn.Bytes,
		SizeLabel: attn.Label,
	}
}

// summary is the comment above kernel name in the lesson's file, in one
// line: what a kernel outside the ladder of // vN: lines does. It panics
// where the file has no such kernel, which any test of the lesson catches.
func summary(name string) string {
	src, err := kernels.Source(kernelFile)
	if err != nil {
		panic(err)
	}
	s, err := kernels.Summary(src, name)
	if err != nil {
		panic(err)
	}
	return s
}

func headDim(s lessons.Size) error {
	if d := attn.Of(s).D; d != 64 && d != 128 {
		return errors.New(errHeadDim)
	}
	return nil
}

// memory is Q, K and V, and an fp16 and an fp32 output; on the host, the
// inputs as fp16 and fp32 on their way up and the output read back.
func memory(s lessons.Size) lessons.Memory {
	a := attn.Of(s)
	return lessons.Memory{Device: attn.InputBytes(a) + attn.OutputBytes(a, 2) + attn.OutputBytes(a, 4),
		Host: 3*2*a.Elems() + 3*4*a.Elems() + 8*a.Elems()}
}

// fcase is one attention problem on the GPU.
type fcase struct {
	env   *lessons.Env
	a     attn.Shape
	buf   *attn.Buffers
	chain *attn.Chain // lesson 13's, made when first asked for
	tol   float64     // for the output last computed
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	a := attn.Of(s)
	// cuDNN's plans and workspace are dropped, so that what its point
	// holds beyond Q, K and V is measured afresh at every size. Where
	// there is no cuDNN there is nothing to drop, and its impl fails on
	// its own with the reason.
	_ = cudnnx.DropPlans(env.Dev)
	buf, err := attn.NewData(a, uint64(a.S)<<16|uint64(a.D)<<1).Upload(env.Dev)
	if err != nil {
		return nil, err
	}
	return &fcase{env: env, a: a, buf: buf, tol: flashTol}, nil
}

// Ops launches impl: v1 and v1 made causal (and kernels judged like
// them) on fp32 copies of the inputs, the rest on fp16.
func (c *fcase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	a := c.a
	causal := int32(0)
	if a.Causal {
		causal = 1
	}
	switch impl.Name {
	case "flash_v1", "flash_v1_causal":
		q, kk, v, err := c.buf.Float32Inputs()
		if err != nil {
			return nil, err
		}
		o, err := c.buf.O(gpu.FP32)
		if err != nil {
			return nil, err
		}
		c.tol = numeric.TolFP32Sum(a.S)
		args := []gpu.Arg{gpu.Ptr(q), gpu.Ptr(kk), gpu.Ptr(v), gpu.Ptr(o), gpu.Int32(int32(a.S)), gpu.Int32(int32(a.D)), gpu.Float32(float32(a.Scale()))}
		if impl.Name == "flash_v1_causal" {
			args = append(args, gpu.Int32(causal))
		}
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(a.S, block), a.Heads()), Block: gpu.Dim(block), Args: args}}, nil
	}
	o, err := c.buf.O(gpu.FP16)
	if err != nil {
		return nil, err
	}
	c.tol = flashTol
	tail := []gpu.Arg{gpu.Ptr(o), gpu.Int32(int32(a.S)), gpu.Int32(int32(a.D)), gpu.Float32(float32(a.Scale())), gpu.Int32(causal)}
	if shape, ok := v2Shapes[impl.Name]; ok {
		if impl.Name == "flash_v2" && a.D == 128 {
			if k, err = c.twin(k, "flash_v2_d128"); err != nil {
				return nil, err
			}
			shape.tiles = 1 // 4 warps of 16 queries, for the registers (see the kernels)
		}
		rows := 4 * 16 * shape.tiles
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(a.S, rows), a.Heads()), Block: gpu.Dim(v2Threads),
			Shared: (rows + 2*shape.stages*v2Keys) * (a.D + v2RowPad) * 2, // Q, and the stages of K and V
			Args:   append([]gpu.Arg{gpu.Ptr(c.buf.Q), gpu.Ptr(c.buf.K), gpu.Ptr(c.buf.V)}, tail...)}}, nil
	}
	switch impl.Name {
	case "flash_v3":
		if k, err = c.twin(k, "flash_v3_d128"); err != nil {
			return nil, err
		}
		keys := v3Keys // tiles of keys: 64 at d = 128, for the registers (see the kernels)
		if a.D == 128 {
			keys = v3Keys / 2
		}
		tmap := func(p gpu.DevicePtr, rows int) gpu.Arg {
			return gpu.TMap(gpu.TensorMap{Base: p, Type: gpu.FP16, Rows: a.S, Cols: a.D, Count: a.Heads(), BoxRows: rows, BoxCols: 64, Swizzle128: true})
		}
		tiles := (v3Rows + 2*v3Stages*keys) * a.D * 2 // Q, and the stages of K and V
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(a.S, v3Rows), a.Heads()), Block: gpu.Dim(v3Threads),
			Shared: v3Align + tiles + 8*(1+3*v3Stages), // room to align, the tiles, the barriers
			Args:   append([]gpu.Arg{tmap(c.buf.Q, v3Rows), tmap(c.buf.K, keys), tmap(c.buf.V, keys)}, tail...)}}, nil
	case chainName:
		if c.chain == nil {
			if c.chain, err = attn.NewChain(c.env, a, c.buf); err != nil {
				return nil, err
			}
		}
		return c.chain.Ops(false)
	case cudnnName:
		g := cudnnx.New("sdpa")
		sh := cudnnx.BHSD(a.B, a.H, a.S, a.D)
		q, kt, v := g.Tensor("q", gpu.FP16, sh), g.Tensor("k", gpu.FP16, sh), g.Tensor("v", gpu.FP16, sh)
		sdpa := g.SDPA
		if a.Causal {
			sdpa = g.CausalSDPA // the mask as operations; 9.14's attention operation takes none
		}
		out := sdpa(q, kt, v, a.Scale())
		op, err := g.Op(cudnnx.Bind{q: c.buf.Q, kt: c.buf.K, v: c.buf.V, out: o}, cudnnx.Options{})
		if err != nil {
			return nil, err
		}
		return []gpu.Op{op}, nil
	}
	return nil, errors.New("flash attention has no variant " + impl.Name)
}

// twin returns k, or at d = 128 the kernel name of the same file: v2 and
// v3 each have a twin compiled for d = 128.
func (c *fcase) twin(k gpu.Kernel, name string) (gpu.Kernel, error) {
	if c.a.D != 128 {
		return k, nil
	}
	return c.env.FileKernel(kernelFile, name)
}

func (c *fcase) Poison() error { return c.buf.Poison() }

// Check compares O with the float64 attention: within fp16's tolerance,
// or float32's for v1.
func (c *fcase) Check() (numeric.CheckStats, error) { return c.buf.Check(c.tol) }

func (c *fcase) Free() {
	if c.chain != nil {
		c.chain.Free()
	}
	c.buf.Free()
}
