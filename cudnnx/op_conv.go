package cudnnx

import (
	"encoding/gob"
	"fmt"

	"cudarepl/gpu"
)

// Conv2D is a 2-D convolution's padding, stride and dilation.
type Conv2D struct{ Pad, Stride, Dilation int }

// Same is the geometry that keeps H and W for an odd r×r filter: padding
// r/2, stride 1.
func Same(r int) Conv2D { return Conv2D{Pad: r / 2, Stride: 1, Dilation: 1} }

// Conv is the forward convolution (cross-correlation, as in deep learning) of
// x (N×C×H×W) with w (K×C×R×S); the result, N×K×P×Q, is virtual and laid out
// like x.
func (g *Graph) Conv(x, w *Tensor, c Conv2D) *Tensor {
	if !g.owns(x, w) {
		return g.add("invalid", gpu.FP32, NCHW(1, 1, 1, 1), true)
	}
	xd, wd := x.t.Dims, w.t.Dims
	if len(xd) != 4 || len(wd) != 4 || xd[1] != wd[1] {
		g.fail("conv: x is %v and w is %v; want N×C×H×W and K×C×R×S with the same C", xd, wd)
		return g.add("invalid", gpu.FP32, NCHW(1, 1, 1, 1), true)
	}
	if c.Stride < 1 || c.Dilation < 1 || c.Pad < 0 {
		g.fail("conv: stride %d, dilation %d and padding %d must be positive (padding may be 0)", c.Stride, c.Dilation, c.Pad)
		c = Same(1)
	}
	out := func(in, k int64) int64 {
		return (in+2*int64(c.Pad)-int64(c.Dilation)*(k-1)-1)/int64(c.Stride) + 1
	}
	n, k, p, q := int(xd[0]), int(wd[0]), int(out(xd[2], wd[2])), int(out(xd[3], wd[3]))
	if p < 1 || q < 1 {
		g.fail("conv: a %dx%d filter does not fit a %dx%d input with padding %d", wd[2], wd[3], xd[2], xd[3], c.Pad)
		p, q = 1, 1
	}
	s := NCHW(n, k, p, q)
	if x.Shape().nhwc() {
		s = NHWC(n, k, p, q)
	}
	y := g.add(fmt.Sprintf("conv%d", len(g.nodes)), g.compute, s, true)
	pad, stride, dil := int64(c.Pad), int64(c.Stride), int64(c.Dilation)
	g.addNode(convFwd{Pad: []int64{pad, pad}, Stride: []int64{stride, stride}, Dilation: []int64{dil, dil}}, y, x, w)
	return y
}

// convFwd is the forward convolution of x with w, one padding, stride and
// dilation per spatial dimension.
type convFwd struct{ Pad, Stride, Dilation []int64 }

func (convFwd) String() string { return "conv_fwd" }
func (convFwd) operands() int  { return 2 }
func (op convFwd) check() error {
	if len(op.Pad) == 0 || len(op.Pad) != len(op.Stride) || len(op.Pad) != len(op.Dilation) {
		return fmt.Errorf("padding, stride and dilation need one value per spatial dimension")
	}
	return nil
}

func (op convFwd) build(b *builder, in []uintptr, out uintptr, compute int32) *desc {
	cd := b.desc(cdnConvolutionDesc).
		enum(cdnAttrConvCompType, cdnTypeDataType, compute).
		enum(cdnAttrConvMode, cdnTypeConvMode, cdnCrossCorrelation).
		int64s(cdnAttrConvSpatialDims, int64(len(op.Pad))).
		int64s(cdnAttrConvDilations, op.Dilation...).
		int64s(cdnAttrConvStrides, op.Stride...).
		int64s(cdnAttrConvPrePad, op.Pad...).
		int64s(cdnAttrConvPostPad, op.Pad...)
	return b.desc(cdnOpConvFwdDesc).after(cd).
		descs(cdnAttrConvFwdX, in[0]).descs(cdnAttrConvFwdW, in[1]).descs(cdnAttrConvFwdY, out).
		descs(cdnAttrConvFwdDesc, cd.d).float(cdnAttrConvFwdAlpha, 1).float(cdnAttrConvFwdBeta, 0)
}

// eval is the 2-D cross-correlation, the first spatial dimension's geometry
// for both.
func (op convFwd) eval(y []float64, ys Shape, in []operand) {
	x, xs, w, ws := in[0].v, in[0].s, in[1].v, in[1].s
	pad, stride, dil := op.Pad[0], op.Stride[0], op.Dilation[0]
	C, H, W := xs.Dims[1], xs.Dims[2], xs.Dims[3]
	R, S := ws.Dims[2], ws.Dims[3]
	ys.each(func(idx []int64, off int64) {
		n, k, p, q := idx[0], idx[1], idx[2], idx[3]
		var acc float64
		for c := int64(0); c < C; c++ {
			for r := int64(0); r < R; r++ {
				h := p*stride - pad + r*dil
				if h < 0 || h >= H {
					continue
				}
				for s := int64(0); s < S; s++ {
					wc := q*stride - pad + s*dil
					if wc < 0 || wc >= W {
						continue
					}
					acc += x[xs.offset([]int64{n, c, h, wc})] * w[ws.offset([]int64{k, c, r, s})]
				}
			}
		}
		y[off] = acc
	})
}

// The operation crosses to the worker inside a graph's nodes.
func init() { gob.Register(convFwd{}) }
