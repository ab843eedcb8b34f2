package cudnnx

import (
	"encoding/gob"
	"fmt"
	"math"
	"sort"
	"strings"

	"cudarepl/gpu"
)

// pointwiseModes are the pointwise modes a graph may use, with cuDNN's
// cudnnPointwiseMode_t value and how many inputs each takes.
var pointwiseModes = map[string]struct{ Value, Inputs int }{
	"add": {0, 2}, "mul": {1, 2}, "min": {2, 2}, "max": {3, 2}, "sub": {9, 2}, "div": {6, 2}, "pow": {8, 2},
	"sqrt": {4, 1}, "abs": {10, 1}, "exp": {13, 1}, "log": {15, 1}, "neg": {16, 1}, "rsqrt": {17, 1},
	"identity": {21, 1}, "reciprocal": {22, 1}, "relu": {100, 1}, "tanh": {101, 1}, "sigmoid": {102, 1},
	"elu": {103, 1}, "gelu": {104, 1}, "softplus": {105, 1}, "swish": {106, 1}, "gelu_tanh": {107, 1},
	// Masks: cmp_ge is x ≥ b as a Bool; gen_index is each element's index
	// along Axis; binary_select is t ? x : b.
	"cmp_ge": {303, 2}, "gen_index": {501, 1}, "binary_select": {601, 3},
}

// pointwiseModeNames lists the pointwise modes, sorted.
func pointwiseModeNames() []string {
	var out []string
	for m := range pointwiseModes {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Pointwise applies mode (one of pointwiseModes: add, mul, relu, sigmoid,
// exp, …) to x, or to x and b, element by element; b broadcasts over
// dimensions where it is 1. The result is virtual, shaped like x.
func (g *Graph) Pointwise(mode string, x *Tensor, b ...*Tensor) *Tensor {
	return g.pointwise(pointwise{Mode: mode}, x, b...)
}

func (g *Graph) pointwise(op pointwise, x *Tensor, b ...*Tensor) *Tensor {
	m, ok := pointwiseModes[op.Mode]
	switch {
	case !ok:
		g.fail("no pointwise mode %q (have %s)", op.Mode, strings.Join(pointwiseModeNames(), ", "))
		return x
	case len(b)+1 != m.Inputs:
		g.fail("pointwise %s takes %d inputs, not %d", op.Mode, m.Inputs, len(b)+1)
		return x
	case !g.owns(append([]*Tensor{x}, b...)...):
		return x
	}
	for _, bi := range b {
		if len(bi.t.Dims) != len(x.t.Dims) {
			g.fail("pointwise %s: %v and %v have different ranks", op.Mode, x.t.Dims, bi.t.Dims)
			return x
		}
		for i, d := range bi.t.Dims {
			if d != 1 && d != x.t.Dims[i] {
				g.fail("pointwise %s: %v does not broadcast to %v", op.Mode, bi.t.Dims, x.t.Dims)
				return x
			}
		}
	}
	dt := g.compute
	if op.Mode == "cmp_ge" {
		dt = gpu.Bool
	}
	y := g.add(fmt.Sprintf("%s%d", op.Mode, len(g.nodes)), dt, x.Shape(), true)
	g.addNode(op, y, append([]*Tensor{x}, b...)...)
	return y
}

// GenIndex is, for each element of x, its index along dimension axis: the
// raw material of masks (x's values are not read).
func (g *Graph) GenIndex(x *Tensor, axis int) *Tensor {
	if !g.owns(x) {
		return x
	}
	if axis < 0 || axis >= len(x.t.Dims) {
		g.fail("gen_index: axis %d of a rank-%d tensor", axis, len(x.t.Dims))
		return x
	}
	return g.pointwise(pointwise{Mode: "gen_index", Axis: int64(axis)}, x)
}

// Add is x + b.
func (g *Graph) Add(x, b *Tensor) *Tensor { return g.Pointwise("add", x, b) }

// Mul is x · b.
func (g *Graph) Mul(x, b *Tensor) *Tensor { return g.Pointwise("mul", x, b) }

// Relu is max(x, 0).
func (g *Graph) Relu(x *Tensor) *Tensor { return g.Pointwise("relu", x) }

// Sigmoid is 1/(1+e^−x).
func (g *Graph) Sigmoid(x *Tensor) *Tensor { return g.Pointwise("sigmoid", x) }

// Gelu is x·Φ(x), with the exact normal CDF.
func (g *Graph) Gelu(x *Tensor) *Tensor { return g.Pointwise("gelu", x) }

// Tanh is tanh(x).
func (g *Graph) Tanh(x *Tensor) *Tensor { return g.Pointwise("tanh", x) }

// Exp is e^x.
func (g *Graph) Exp(x *Tensor) *Tensor { return g.Pointwise("exp", x) }

// pointwise is one element-by-element operation: x alone, or x and b (b
// broadcast), or for binary_select the mask t too.
type pointwise struct {
	Mode string
	Axis int64 // the dimension whose index gen_index writes
}

func (op pointwise) String() string { return "pointwise " + op.Mode }
func (op pointwise) operands() int  { return pointwiseModes[op.Mode].Inputs }
func (op pointwise) check() error {
	if _, ok := pointwiseModes[op.Mode]; !ok {
		return fmt.Errorf("no pointwise mode %q", op.Mode)
	}
	return nil
}

func (op pointwise) build(b *builder, in []uintptr, out uintptr, compute int32) *desc {
	pd := b.desc(cdnPointwiseDesc).
		enum(cdnAttrPointwiseMode, cdnTypePointwise, int32(pointwiseModes[op.Mode].Value)).
		enum(cdnAttrPointwiseMathPrec, cdnTypeDataType, compute)
	if op.Mode == "gen_index" {
		pd.int64s(cdnAttrPointwiseAxis, op.Axis)
	}
	d := b.desc(cdnOpPointwiseDesc).after(pd).descs(cdnAttrPwDesc, pd.d).descs(cdnAttrPwX, in[0])
	if len(in) > 1 {
		d.descs(cdnAttrPwB, in[1])
	}
	if len(in) > 2 {
		d.descs(cdnAttrPwT, in[2])
	}
	return d.descs(cdnAttrPwY, out)
}

func (op pointwise) eval(y []float64, ys Shape, in []operand) {
	x := in[0]
	var b, t operand
	if len(in) > 1 {
		b = in[1]
	}
	if len(in) > 2 {
		t = in[2]
	}
	ys.each(func(idx []int64, off int64) {
		bv := 0.0
		if b.v != nil {
			bv = b.v[b.s.offsetBroadcast(idx)]
		}
		switch op.Mode {
		case "gen_index":
			y[off] = float64(idx[op.Axis])
		case "binary_select":
			y[off] = bv
			if t.v[t.s.offsetBroadcast(idx)] != 0 {
				y[off] = x.v[x.s.offset(idx)]
			}
		default:
			y[off] = pointwiseValue(op.Mode, x.v[x.s.offset(idx)], bv)
		}
	})
}

// pointwiseValue is one element of a pointwise mode.
func pointwiseValue(mode string, x, b float64) float64 {
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

// The operation crosses to the worker inside a graph's nodes.
func init() { gob.Register(pointwise{}) }
