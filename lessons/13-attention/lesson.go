// Package attention is lesson 13: scaled dot-product attention as a chain
// of launches (two cuBLAS products around a scale, a mask and lesson 12's
// softmax), where the time goes, the S×S memory that grows until the GPU
// runs out, and, as the exercise, the scale and the mask folded into the
// softmax.
package attention

import (
	"embed"
	"fmt"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/attn"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

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
		Number: 13, Slug: "attention", Files: files, Kernels: "attention.cu", Problem: problem(),
		Exercise: &lessons.Exercise{
			File: "masked_softmax_exercise.cu", Kernel: "masked_softmax_exercise", Like: maskedName, Bench: maskedBench,
			Task: "Fold the scale and the causal mask into the softmax: scale each score before its exponential, " +
				"leave the keys after the query out of the max and the sum, and write every probability, 0 for those keys.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "racecheck"},
			{File: "mask_zero.cu", Want: "causal: check: y["},
			{File: "mask_diagonal.cu", Want: "check: y[0,0] = 0, want 1 ("},
			{File: "scale_after_exp.cu", Want: "keys: check: y["},
			{File: "mask_unwritten.cu", Want: "not finite"},
		},
		Actions: map[string]lessons.Action{
			"Between the products": &lessons.ShowKernel{Names: []string{"scale_h", "causal_mask_h"}},
			"Check":                &lessons.CheckStep{More: []*lessons.Problem{maskedProblem()}},
			"Where the time goes":  &lessons.Run{Name: "measure", F: breakdown},
			// Memory is what each run held, Q, K and V included: what
			// the table's memory column prints, so the figure agrees.
			"Memory grows as S²": &lessons.Sweep{Title: "Attention as a chain, fp16", XLabel: "sequence length S (B=4, H=16, d=64)",
				Sizes: sizes, XDim: 2, Memory: true},
			"Exercise": &lessons.ExerciseStep{},
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
				Library: true, Kernels: mid, Extra: attn.ChainExtra},
			{Name: inAlpha, Summary: "the same with 1/√d as the first product's α: one launch and one pass over the scores fewer",
				Library: true, Kernels: mid, Extra: attn.ChainExtra},
		},
		Setup:     setup,
		Memory:    memory,
		Work:      attn.FLOPs,
		Bytes:     attn.Bytes,
		SizeLabel: attn.Label,
	}
}

// memory is Q, K and V on the device; on the host, the same as fp16 and
// the output read back and widened.
func memory(s lessons.Size) lessons.Memory {
	a := attn.Of(s)
	return lessons.Memory{Device: attn.InputBytes(a), Host: 3*2*a.Elems() + 6*a.Elems()}
}

// acase is one attention problem on the GPU, with the chain's kernels.
type acase struct {
	buf   *attn.Buffers
	chain *attn.Chain
}

func setup(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	a := attn.Of(s)
	c := &acase{}
	var err error
	if c.buf, err = attn.NewData(a, uint64(a.S)<<16|uint64(a.D)<<1|boolBit(a.Causal)).Upload(env.Dev); err != nil {
		return nil, err
	}
	if c.chain, err = attn.NewChain(env, a, c.buf); err != nil {
		c.buf.Free()
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

// Ops is impl's chain; a learner's edit of scale_h or causal_mask_h comes
// in through Env.Kernel, which the chain loaded them with.
func (c *acase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
	if impl.Name != chain && impl.Name != inAlpha {
		return nil, fmt.Errorf("attention has no variant %q", impl.Name)
	}
	return c.chain.Ops(impl.Name == inAlpha)
}

func (c *acase) Poison() error { return c.buf.Poison() }

// Check compares O with the float64 attention, within fp16's tolerance.
func (c *acase) Check() (numeric.CheckStats, error) { return c.buf.Check(numeric.TolHalf) }

func (c *acase) Free() {
	c.chain.Free()
	c.buf.Free()
}
