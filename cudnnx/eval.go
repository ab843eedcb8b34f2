package cudnnx

import (
	"fmt"
)

// Eval computes the graph on the CPU in float64: the reference every cuDNN
// result is checked against. inputs holds each input tensor's elements in
// memory order (as its strides lay them out); the result holds every
// tensor's, intermediates included, in the same order.
func (g *Graph) Eval(inputs map[*Tensor][]float64) (map[*Tensor][]float64, error) {
	if _, err := g.spec(); err != nil {
		return nil, err
	}
	byUID := map[int64]*Tensor{}
	vals := map[*Tensor][]float64{}
	for _, t := range g.tensors {
		byUID[t.t.UID] = t
		if t.t.ByValue {
			vals[t] = []float64{t.t.Value}
			continue
		}
		if v, ok := inputs[t]; ok {
			if int64(len(v)) != t.Shape().Span() {
				return nil, fmt.Errorf("cudnnx: eval %s: %s has %d elements, want %d", g.name, t.t.Name, len(v), t.Shape().Span())
			}
			vals[t] = v
		}
	}
	for i, n := range g.nodes {
		in := make([]*Tensor, len(n.In))
		for j, u := range n.In {
			in[j] = byUID[u]
			if vals[in[j]] == nil {
				return nil, fmt.Errorf("cudnnx: eval %s: node %d needs %s, which has no values", g.name, i, in[j].t.Name)
			}
		}
		out := byUID[n.Out]
		y := make([]float64, out.Shape().Span())
		ops := make([]operand, len(in))
		for j, t := range in {
			ops[j] = operand{vals[t], t.Shape()}
		}
		n.Op.eval(y, out.Shape(), ops)
		vals[out] = y
	}
	return vals, nil
}

// Span is how many elements the shape's memory holds: one past the largest
// offset.
func (s Shape) Span() int64 {
	n := int64(1)
	for i, d := range s.Dims {
		n += (d - 1) * s.Strides[i]
	}
	return n
}

func (s Shape) offset(idx []int64) int64 {
	var o int64
	for i, v := range idx {
		o += v * s.Strides[i]
	}
	return o
}

// offsetBroadcast is the offset of idx with dimensions of size 1 pinned to 0.
func (s Shape) offsetBroadcast(idx []int64) int64 {
	var o int64
	for i, v := range idx {
		if s.Dims[i] != 1 {
			o += v * s.Strides[i]
		}
	}
	return o
}

// each calls f with every index of s and its offset, last dimension fastest.
func (s Shape) each(f func(idx []int64, off int64)) {
	idx := make([]int64, len(s.Dims))
	for {
		f(idx, s.offset(idx))
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < s.Dims[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}
