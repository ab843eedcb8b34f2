package attn

import (
	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
)

// Chain is attention as lesson 13 runs it, a chain of launches:
// cuBLAS's Q·Kᵀ, scale_h, causal_mask_h when causal, softmax_h and
// cuBLAS's P·V, with the S×S scores and probabilities in device memory
// between them. Lesson 14 times it beside flash attention.
type Chain struct {
	env                  *lessons.Env
	a                    Shape
	buf                  *Buffers
	scores, probs        gpu.DevicePtr // allocated by the first Steps
	scale, mask, softmax gpu.Kernel
}

// ChainLaunch is one launch of a Chain, with what the lessons call it.
type ChainLaunch struct {
	Name string
	Op   gpu.Op
}

// NewChain loads the chain's kernels (scale_h and causal_mask_h from
// attention.cu, softmax_h from softmax.cu) for attention of shape a on
// buf's inputs. A learner's edit of them comes in through
// lessons.Env.Kernel.
func NewChain(env *lessons.Env, a Shape, buf *Buffers) (*Chain, error) {
	c := &Chain{env: env, a: a, buf: buf}
	for _, k := range []struct {
		file, name string
		dst        *gpu.Kernel
	}{{"attention.cu", "scale_h", &c.scale}, {"attention.cu", "causal_mask_h", &c.mask}, {"softmax.cu", "softmax_h", &c.softmax}} {
		var err error
		if *k.dst, err = env.FileKernel(k.file, k.name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ChainExtra is what the chain holds beyond Q, K and V at s: the
// scores and the probabilities, fp16 and S×S a head each, and the output.
func ChainExtra(s lessons.Size) int64 {
	a := Of(s)
	return 2*2*int64(a.Heads())*int64(a.S)*int64(a.S) + OutputBytes(a, 2)
}

// Steps is the chain as named launches, writing buf's fp16 output. With
// scaleInAlpha the scale is the first product's α and scale_h is not
// launched.
func (c *Chain) Steps(scaleInAlpha bool) ([]ChainLaunch, error) {
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
	qk := blas.GEMM{M: s, N: s, K: d, A: c.buf.Q, B: c.buf.K, C: c.scores, TransB: true, Alpha: 1, Type: gpu.FP16,
		Batch: heads, StrideA: int64(s * d), StrideB: int64(s * d), StrideC: int64(s) * int64(s)}
	pv := blas.GEMM{M: s, N: d, K: s, A: c.probs, B: c.buf.V, C: o, Alpha: 1, Type: gpu.FP16,
		Batch: heads, StrideA: int64(s) * int64(s), StrideB: int64(s * d), StrideC: int64(s * d)}
	waves := c.env.Dev.Info().TwoWaves(256)
	rows := heads * s
	tx, ty := kernels.SoftmaxBlock(s)
	var out []ChainLaunch
	if scaleInAlpha {
		qk.Alpha = float32(c.a.Scale())
		out = append(out, ChainLaunch{"Q·Kᵀ, scaled (cuBLAS)", qk})
	} else {
		out = append(out, ChainLaunch{"Q·Kᵀ (cuBLAS)", qk},
			ChainLaunch{"scale_h", gpu.Launch{Kernel: c.scale, Grid: gpu.Dim(min(gpu.Blocks(int((n+7)/8), 256), waves)), Block: gpu.Dim(256),
				Args: []gpu.Arg{gpu.Ptr(c.scores), gpu.Int64(n), gpu.Float32(float32(c.a.Scale()))}}})
	}
	if c.a.Causal {
		// A warp a row: 8 rows to a block of 256, as many blocks as the
		// rows need up to two waves, the warps striding over the rest.
		out = append(out, ChainLaunch{"causal_mask_h", gpu.Launch{Kernel: c.mask, Grid: gpu.Dim(min(gpu.Blocks(rows, 256/32), waves)), Block: gpu.Dim(256),
			Args: []gpu.Arg{gpu.Ptr(c.scores), gpu.Int32(int32(s)), gpu.Int64(int64(rows))}}})
	}
	out = append(out,
		ChainLaunch{"softmax_h", gpu.Launch{Kernel: c.softmax, Grid: gpu.Dim(gpu.Blocks(rows, ty)), Block: gpu.Dim(tx, ty),
			Args: []gpu.Arg{gpu.Ptr(c.scores), gpu.Ptr(c.probs), gpu.Int32(int32(rows)), gpu.Int32(int32(s))}}},
		ChainLaunch{"P·V (cuBLAS)", pv})
	return out, nil
}

// Ops is Steps' launches, unnamed.
func (c *Chain) Ops(scaleInAlpha bool) ([]gpu.Op, error) {
	st, err := c.Steps(scaleInAlpha)
	if err != nil {
		return nil, err
	}
	ops := make([]gpu.Op, len(st))
	for i, s := range st {
		ops[i] = s.Op
	}
	return ops, nil
}

// Free frees the scores and the probabilities; buf is its owner's.
func (c *Chain) Free() {
	c.env.FreeAll(c.scores, c.probs)
	c.scores, c.probs = 0, 0
}
