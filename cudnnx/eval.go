package cudnnx

import (
	"fmt"
	"math"
)

// Eval computes the graph on the CPU in float64: the reference every cuDNN
// result is checked against. inputs holds each input tensor's elements in
// memory order (as its strides lay them out); the result holds every
// tensor's, intermediates included, in the same order.
func (g *Graph) Eval(inputs map[*Tensor][]float64) (map[*Tensor][]float64, error) {
	if _, err := g.Spec(); err != nil {
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
		switch n.Op {
		case "conv_fwd":
			evalConv(y, out.Shape(), vals[in[0]], in[0].Shape(), vals[in[1]], in[1].Shape(), n.Pad[0], n.Stride[0], n.Dilation[0])
		case "pointwise":
			var b, t []float64
			var bs, ts Shape
			if len(in) > 1 {
				b, bs = vals[in[1]], in[1].Shape()
			}
			if len(in) > 2 {
				t, ts = vals[in[2]], in[2].Shape()
			}
			xs, x := in[0].Shape(), vals[in[0]]
			out.Shape().each(func(idx []int64, off int64) {
				bv := 0.0
				if b != nil {
					bv = b[bs.offsetBroadcast(idx)]
				}
				switch n.Mode {
				case "gen_index":
					y[off] = float64(idx[n.Axis])
				case "binary_select":
					y[off] = bv
					if t[ts.offsetBroadcast(idx)] != 0 {
						y[off] = x[xs.offset(idx)]
					}
				default:
					y[off] = pointwise(n.Mode, x[xs.offset(idx)], bv)
				}
			})
		case "matmul":
			evalMatmul(y, out.Shape(), vals[in[0]], in[0].Shape(), vals[in[1]], in[1].Shape())
		case "reduction":
			evalReduce(n.Mode, y, out.Shape(), vals[in[0]], in[0].Shape())
		case "sdpa_fwd":
			evalSDPA(y, out.Shape(), vals[in[0]], in[0].Shape(), vals[in[1]], in[1].Shape(), vals[in[2]], in[2].Shape(), vals[in[3]][0])
		}
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

func evalConv(y []float64, ys Shape, x []float64, xs Shape, w []float64, ws Shape, pad, stride, dil int64) {
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

func evalMatmul(y []float64, ys Shape, a []float64, as Shape, b []float64, bs Shape) {
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

func evalReduce(mode string, y []float64, ys Shape, x []float64, xs Shape) {
	init := map[string]float64{"add": 0, "avg": 0, "norm1": 0, "norm2": 0, "mul": 1, "min": math.Inf(1), "max": math.Inf(-1), "amax": 0}[mode]
	for i := range y {
		y[i] = init
	}
	count := float64(xs.Elements()) / float64(ys.Elements())
	xs.each(func(idx []int64, off int64) {
		o := ys.offsetBroadcast(idx)
		v := x[off]
		switch mode {
		case "add", "avg":
			y[o] += v
		case "mul":
			y[o] *= v
		case "min":
			y[o] = math.Min(y[o], v)
		case "max":
			y[o] = math.Max(y[o], v)
		case "amax":
			y[o] = math.Max(y[o], math.Abs(v))
		case "norm1":
			y[o] += math.Abs(v)
		case "norm2":
			y[o] += v * v
		}
	})
	for i := range y {
		switch mode {
		case "avg":
			y[i] /= count
		case "norm2":
			y[i] = math.Sqrt(y[i])
		}
	}
}

// pointwise is one element of a pointwise mode.
func pointwise(mode string, x, b float64) float64 {
	switch mode {
	case "add":
		return x + b
	case "mul":
		return x * b
	case "min":
		return math.Min(x, b)
	case "max":
		return math.Max(x, b)
	case "sub":
		return x - b
	case "div":
		return x / b
	case "pow":
		return math.Pow(x, b)
	case "sqrt":
		return math.Sqrt(x)
	case "abs":
		return math.Abs(x)
	case "exp":
		return math.Exp(x)
	case "log":
		return math.Log(x)
	case "neg":
		return -x
	case "cmp_ge":
		if x >= b {
			return 1
		}
		return 0
	case "rsqrt":
		return 1 / math.Sqrt(x)
	case "identity":
		return x
	case "reciprocal":
		return 1 / x
	case "relu":
		return math.Max(x, 0)
	case "tanh":
		return math.Tanh(x)
	case "sigmoid":
		return 1 / (1 + math.Exp(-x))
	case "elu":
		if x > 0 {
			return x
		}
		return math.Exp(x) - 1
	case "gelu":
		return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
	case "softplus":
		return math.Log1p(math.Exp(x))
	case "swish":
		return x / (1 + math.Exp(-x))
	case "gelu_tanh":
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}
	return math.NaN()
}

// evalSDPA is softmax(scale·q·kᵀ)·v for each of q's B×H heads, its max
// subtracted before the exponentials.
func evalSDPA(o []float64, os Shape, q []float64, qs Shape, k []float64, ks Shape, v []float64, vs Shape, scale float64) {
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
