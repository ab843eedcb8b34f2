package cudnnx

import (
	"encoding/gob"
	"math"
	"slices"

	"cudarepl/gpu"
)

// SDPA is scaled dot-product attention, softmax(scale·q·kᵀ)·v over the
// last two dimensions of q, k and v (each B×H×S×D), as cuDNN 9.13's single
// attention operation: its engines fuse the two products and the softmax
// into one kernel, and the S×S scores never reach memory. The result has
// q's shape and type and lives in device memory.
func (g *Graph) SDPA(q, k, v *Tensor, scale float64) *Tensor {
	if !g.owns(q, k, v) {
		return q
	}
	qd, kd, vd := q.t.Dims, k.t.Dims, v.t.Dims
	if len(qd) != 4 || len(kd) != 4 || len(vd) != 4 || !slices.Equal(qd[:2], kd[:2]) || !slices.Equal(kd, vd) || qd[3] != kd[3] {
		g.fail("sdpa: q is %v, k %v and v %v; want B×H×S×D each, with k and v alike", qd, kd, vd)
		return q
	}
	sc := g.Scalar("attn_scale", gpu.FP32, scale, 4)
	o := g.add("o", q.t.Type, Shape{q.t.Dims, q.t.Strides}, false)
	g.addNode(sdpaFwd{}, o, q, k, v, sc)
	g.nodes[len(g.nodes)-1].Compute = gpu.FP32 // whatever the graph's: the operation computes in fp32
	return o
}

// CausalSDPA is SDPA with a causal mask, query i seeing keys 0…i only, as
// the graph of operations cuDNN's fused attention engines recognise (its
// unified operation takes no mask before cuDNN 9.21): q·kᵀ, the scale, the
// mask from two gen_index and a cmp_ge, the softmax as max, subtract,
// exponential, sum and divide (with its statistics, kept virtual), and the
// product with v. k is read transposed: the graph records it as B×H×D×S,
// its memory unchanged, so k must feed nothing else. The result has q's
// shape and type and lives in device memory.
func (g *Graph) CausalSDPA(q, k, v *Tensor, scale float64) *Tensor {
	if !g.owns(q, k, v) {
		return q
	}
	qd, kd, vd := q.t.Dims, k.t.Dims, v.t.Dims
	if len(qd) != 4 || len(kd) != 4 || len(vd) != 4 || !slices.Equal(qd[:2], kd[:2]) || !slices.Equal(kd, vd) || qd[3] != kd[3] || qd[2] != kd[2] {
		g.fail("causal sdpa: q is %v, k %v and v %v; want B×H×S×D each, alike", qd, kd, vd)
		return q
	}
	k.t.Dims[2], k.t.Dims[3] = k.t.Dims[3], k.t.Dims[2]
	k.t.Strides[2], k.t.Strides[3] = k.t.Strides[3], k.t.Strides[2]
	s := g.Mul(g.Matmul(q, k), g.Scalar("attn_scale", gpu.FP32, scale, 4))
	keep := g.Pointwise("cmp_ge", g.GenIndex(s, 2), g.GenIndex(s, 3))
	s = g.Pointwise("binary_select", s, g.Scalar("masked", gpu.FP32, maskedScore, 4), keep)
	rows := []int64{qd[0], qd[1], qd[2], 1}
	m := g.Reduce("max", s, rows)
	e := g.Exp(g.Pointwise("sub", s, m))
	z := g.Reduce("add", e, rows)
	g.Add(m, g.Pointwise("log", z)) // the statistics a backward pass would keep
	p := g.Pointwise("div", e, z)
	p.t.Type = q.t.Type // the second product takes p in q's type
	return g.Matmul(p, v).Output(q.t.Type)
}

// maskedScore is what a masked score becomes: far below any real score, so
// that its exponential is 0, yet finite.
const maskedScore = -1e10

// sdpaFwd is cuDNN 9.13's unified attention operation: softmax(scale·q·kᵀ)·v
// in one node, which its engines run as one fused kernel. Its operands
// are q, k, v and the by-value scale.
type sdpaFwd struct{}

func (sdpaFwd) String() string { return "sdpa_fwd" }
func (sdpaFwd) operands() int  { return 4 }
func (sdpaFwd) check() error   { return nil }

func (sdpaFwd) build(b *builder, in []uintptr, out uintptr, _ int32) *desc {
	return b.desc(cdnOpSDPAFwdDesc).descs(cdnAttrSDPAFwdQ, in[0]).descs(cdnAttrSDPAFwdK, in[1]).
		descs(cdnAttrSDPAFwdV, in[2]).descs(cdnAttrSDPAFwdScale, in[3]).descs(cdnAttrSDPAFwdO, out)
}

// eval is softmax(scale·q·kᵀ)·v for each of q's B×H heads, its max
// subtracted before the exponentials.
func (sdpaFwd) eval(o []float64, os Shape, in []operand) {
	q, qs, k, ks, v, vs, scale := in[0].v, in[0].s, in[1].v, in[1].s, in[2].v, in[2].s, in[3].v[0]
	heads, sq, sk, d := qs.Dims[0]*qs.Dims[1], qs.Dims[2], ks.Dims[2], qs.Dims[3]
	p := make([]float64, sk)
	for bh := range heads {
		b, h := bh/qs.Dims[1], bh%qs.Dims[1]
		for i := range sq {
			m := math.Inf(-1)
			for j := range sk {
				dot := 0.0
				for c := range d {
					dot += q[qs.offset([]int64{b, h, i, c})] * k[ks.offset([]int64{b, h, j, c})]
				}
				p[j] = scale * dot
				m = math.Max(m, p[j])
			}
			sum := 0.0
			for j := range p {
				p[j] = math.Exp(p[j] - m)
				sum += p[j]
			}
			for c := range d {
				acc := 0.0
				for j := range sk {
					acc += p[j] * v[vs.offset([]int64{b, h, j, c})]
				}
				o[os.offset([]int64{b, h, i, c})] = acc / sum
			}
		}
	}
}

// The operation crosses to the worker inside a graph's nodes.
func init() { gob.Register(sdpaFwd{}) }
