// Package attention is lesson 13: scaled dot-product attention as a chain
// of launches (two cuBLAS products around a scale, a mask and lesson 12's
// softmax), where the time goes, and the S×S memory that grows until the
// GPU runs out.
package attention

import (
	"embed"
	"fmt"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
)

//go:embed lesson.md
var markdown string

//go:embed results
var results embed.FS

// The impls: the chain as a framework runs it, and with the scale folded
// into the first product.
const (
	chain   = "chain"
	inAlpha = "chain, scale in α"
)

// benchB, benchH and benchD are the shape the lesson measures, with S
// swept: B = 4 batches of H = 16 heads of d = 64.
const benchB, benchH, benchD = 4, 16, 64

func init() {
	var sizes []lessons.Size
	for _, s := range []int{512, 1024, 2048, 4096, 8192, 16384, 32768} {
		sizes = append(sizes, lessons.Size{benchB, benchH, s, benchD})
	}
	lessons.Register(lessons.Def{
		Number: 13, Slug: "attention", Markdown: markdown, Kernels: "attention.cu", Problem: problem(), Results: results,
		Actions: map[string]lessons.Action{
			"Between the products": lessons.ShowKernel{Names: []string{"scale_h", "causal_mask_h"}},
			"Check":                lessons.CheckStep{},
			"Where the time goes":  lessons.Run{Name: "measure", F: breakdown},
			"Memory grows as S²": lessons.Sweep{Title: "Attention as a chain, fp16", XLabel: "sequence length S (B=4, H=16, d=64)",
				Sizes: sizes, XDim: 2, Memory: true, Extra: true, ExtraLabel: "beyond Q, K and V"},
		},
	})
}

func problem() *lessons.Problem {
	mid := []string{"scale_h", "causal_mask_h"}
	return &lessons.Problem{
		Name: "attention (fp16)", DType: "float16", Unit: "TFLOP/s", Peak: gpu.PeakFP16, Kernels: "attention.cu",
		CheckSizes: []lessons.Size{
			{1, 4, 1, 64}, {1, 4, 3, 64, 1}, {2, 2, 100, 64}, {1, 4, 100, 64, 1}, {1, 4, 257, 64}, {2, 4, 257, 64, 1},
			{1, 4, 1, 128, 1}, {1, 4, 3, 128}, {1, 4, 100, 128, 1}, {2, 2, 257, 128}, {1, 4, 257, 128, 1},
		},
		Impls: []lessons.Impl{
			{Name: chain, Summary: "cuBLAS Q·Kᵀ, scale_h, causal_mask_h when causal, softmax_h, cuBLAS P·V: the S×S scores cross memory at every step",
				Library: true, Kernels: mid, Extra: scoresBytes},
			{Name: inAlpha, Summary: "the same with 1/√d as the first product's α: one launch and one pass over the scores fewer",
				Library: true, Kernels: mid, Extra: scoresBytes},
		},
		Setup:     setup,
		Memory:    memory,
		Work:      lessons.AttnFLOPs,
		SizeLabel: lessons.AttnLabel,
	}
}

// scoresBytes is what the chain holds beyond Q, K and V: the scores, the
// probabilities (fp16, S×S a head each) and the output.
func scoresBytes(s lessons.Size) int64 {
	a := lessons.AttnOf(s)
	return 2*2*int64(a.Heads())*int64(a.S)*int64(a.S) + lessons.AttnOutputBytes(a, 2)
}

// memory is Q, K and V on the device; on the host, the same as fp16 and
// the output read back and widened.
func memory(s lessons.Size) lessons.Memory {
	a := lessons.AttnOf(s)
	return lessons.Memory{Device: lessons.AttnInputBytes(a), Host: 3*2*a.Elems() + 6*a.Elems()}
}

// acase is one attention problem on the GPU, with the chain's kernels.
type acase struct {
	env                  *lessons.Env
	a                    lessons.AttnShape
	buf                  *lessons.AttnBuffers
	scores, probs        gpu.DevicePtr // allocated by the first chain asked for
	scale, mask, softmax gpu.Kernel
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	a := lessons.AttnOf(s)
	c := &acase{env: env, a: a}
	src, err := kernels.Source("attention.cu")
	if err != nil {
		return nil, err
	}
	if c.scale, err = env.Kernel(src, "scale_h"); err != nil {
		return nil, err
	}
	if c.mask, err = env.Kernel(src, "causal_mask_h"); err != nil {
		return nil, err
	}
	sm, err := kernels.Source("softmax.cu")
	if err != nil {
		return nil, err
	}
	if c.softmax, err = env.Kernel(sm, "softmax_h"); err != nil {
		return nil, err
	}
	if c.buf, err = lessons.NewAttnData(a, uint64(a.S)<<16|uint64(a.D)<<1|boolBit(a.Causal)).Upload(env.Dev); err != nil {
		return nil, err
	}
	return c, nil
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// launch is one launch of the chain with what it is called in the lesson's
// breakdown.
type launch struct {
	name string
	op   gpu.Op
}

// steps is impl's chain as named launches.
func (c *acase) steps(impl string) ([]launch, error) {
	o, err := c.buf.O(gpu.FP16)
	if err != nil {
		return nil, err
	}
	heads, s, d := c.a.Heads(), c.a.S, c.a.D
	n := int64(heads) * int64(s) * int64(s)
	if c.scores == 0 {
		if c.scores, err = c.env.Dev.Alloc(2 * n); err != nil {
			return nil, err
		}
		if c.probs, err = c.env.Dev.Alloc(2 * n); err != nil {
			return nil, err
		}
	}
	qk := gpu.GEMM{M: s, N: s, K: d, A: c.buf.Q, B: c.buf.K, C: c.scores, TransB: true, Alpha: 1, Type: gpu.FP16,
		Batch: heads, StrideA: int64(s * d), StrideB: int64(s * d), StrideC: int64(s) * int64(s)}
	pv := gpu.GEMM{M: s, N: d, K: s, A: c.probs, B: c.buf.V, C: o, Alpha: 1, Type: gpu.FP16,
		Batch: heads, StrideA: int64(s) * int64(s), StrideB: int64(s * d), StrideC: int64(s * d)}
	info := c.env.Dev.Info()
	waves := 2 * info.SMs * info.MaxThreadsPerSM / 256 // two full waves of blocks of 256
	rows := heads * s
	tx, ty := lessons.SoftmaxBlock(s)
	var out []launch
	if impl == inAlpha {
		qk.Alpha = float32(c.a.Scale())
		out = append(out, launch{"Q·Kᵀ, scaled (cuBLAS)", qk})
	} else {
		out = append(out, launch{"Q·Kᵀ (cuBLAS)", qk},
			launch{"scale_h", gpu.Launch{Kernel: c.scale, Grid: gpu.Dim(min(gpu.Blocks(int((n+7)/8), 256), waves)), Block: gpu.Dim(256),
				Args: []gpu.Arg{gpu.Ptr(c.scores), gpu.Int64(n), gpu.Float32(float32(c.a.Scale()))}}})
	}
	if c.a.Causal {
		out = append(out, launch{"causal_mask_h", gpu.Launch{Kernel: c.mask, Grid: gpu.Dim(min(rows, waves)), Block: gpu.Dim(256),
			Args: []gpu.Arg{gpu.Ptr(c.scores), gpu.Int32(int32(s)), gpu.Int64(int64(rows))}}})
	}
	out = append(out,
		launch{"softmax_h", gpu.Launch{Kernel: c.softmax, Grid: gpu.Dim(gpu.Blocks(rows, ty)), Block: gpu.Dim(tx, ty),
			Args: []gpu.Arg{gpu.Ptr(c.scores), gpu.Ptr(c.probs), gpu.Int32(int32(rows)), gpu.Int32(int32(s))}}},
		launch{"P·V (cuBLAS)", pv})
	return out, nil
}

// Ops is impl's chain; a learner's edit of scale_h or causal_mask_h comes
// in through Env.Kernel, which setup loaded them with.
func (c *acase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
	if impl.Name != chain && impl.Name != inAlpha {
		return nil, fmt.Errorf("attention has no variant %q", impl.Name)
	}
	st, err := c.steps(impl.Name)
	if err != nil {
		return nil, err
	}
	ops := make([]gpu.Op, len(st))
	for i, s := range st {
		ops[i] = s.op
	}
	return ops, nil
}

func (c *acase) Poison() error { return c.buf.Poison() }

// Check compares O with the float64 attention, within fp16's tolerance.
func (c *acase) Check() (lessons.CheckStats, error) { return c.buf.Check(lessons.TolHalf) }

func (c *acase) Free() {
	c.env.FreeAll(c.scores, c.probs)
	c.buf.Free()
}
