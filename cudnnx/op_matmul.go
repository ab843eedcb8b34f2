package cudnnx

import (
	"encoding/gob"
	"fmt"
)

// Matmul is the batched product a·b of a (…×M×K) and b (…×K×N), rank 3
// or more, the leading dimensions a batch in which either side may be 1;
// the result, …×M×N row-major, is virtual.
func (g *Graph) Matmul(a, b *Tensor) *Tensor {
	if !g.owns(a, b) {
		return a
	}
	ad, bd := a.t.Dims, b.t.Dims
	r := len(ad)
	ok := r >= 3 && len(bd) == r && ad[r-1] == bd[r-2]
	dims := make([]int64, r)
	for i := 0; ok && i < r-2; i++ {
		ok = ad[i] == bd[i] || ad[i] == 1 || bd[i] == 1
		dims[i] = max(ad[i], bd[i])
	}
	if !ok {
		g.fail("matmul: a is %v and b is %v; want …×M×K and …×K×N", ad, bd)
		return a
	}
	dims[r-2], dims[r-1] = ad[r-2], bd[r-1]
	y := g.add(fmt.Sprintf("matmul%d", len(g.nodes)), g.compute, packed(dims), true)
	g.addNode(matmul{}, y, a, b)
	return y
}

// matmul is the batched matrix product of its two operands.
type matmul struct{}

func (matmul) String() string { return "matmul" }
func (matmul) operands() int  { return 2 }
func (matmul) check() error   { return nil }

func (matmul) build(b *builder, in []uintptr, out uintptr, compute int32) *desc {
	md := b.desc(cdnMatmulDesc).enum(cdnAttrMatmulCompType, cdnTypeDataType, compute)
	return b.desc(cdnOpMatmulDesc).after(md).descs(cdnAttrMatmulA, in[0]).descs(cdnAttrMatmulB, in[1]).
		descs(cdnAttrMatmulC, out).descs(cdnAttrMatmulDesc, md.d)
}

// eval multiplies over the last two dimensions, the leading ones
// broadcast where an operand's is 1.
func (matmul) eval(y []float64, ys Shape, in []operand) {
	a, as, b, bs := in[0].v, in[0].s, in[1].v, in[1].s
	r := len(ys.Dims)
	K := as.Dims[r-1]
	ai, bi := make([]int64, r), make([]int64, r)
	ys.each(func(idx []int64, off int64) {
		copy(ai, idx)
		copy(bi, idx)
		var acc float64
		for k := int64(0); k < K; k++ {
			ai[r-1], bi[r-2] = k, k
			acc += a[as.offsetBroadcast(ai)] * b[bs.offsetBroadcast(bi)]
		}
		y[off] = acc
	})
}

// The operation crosses to the worker inside a graph's nodes.
func init() { gob.Register(matmul{}) }
