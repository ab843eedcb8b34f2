package cudnnx

import (
	"fmt"
	"math"
	"slices"

	"cudarepl/fuse"
	"cudarepl/gpu"
)

// Expression adds the elementwise expression e to the graph as pointwise
// operations over in, one tensor for each of e.Inputs(), all of one shape,
// and returns its result, virtual until marked Output. Numbers become
// by-value scalars, and operations on numbers alone are done here. The
// error names what cuDNN's pointwise operations cannot do: a function they
// lack (sin, cos), or pow with a number as its base.
func (g *Graph) Expression(e *fuse.Expr, in []*Tensor) (*Tensor, error) {
	switch {
	case len(e.Inputs()) == 0:
		return nil, fmt.Errorf("cudnnx: %s has no inputs: a graph needs a tensor to shape its result", e)
	case len(in) != len(e.Inputs()):
		return nil, fmt.Errorf("cudnnx: %s has %d inputs, not %d", e, len(e.Inputs()), len(in))
	}
	for _, t := range in[1:] {
		if !slices.Equal(t.t.Dims, in[0].t.Dims) {
			return nil, fmt.Errorf("cudnnx: %s: inputs %s %v and %s %v differ in shape", e, in[0].Name(), in[0].t.Dims, t.Name(), t.t.Dims)
		}
	}
	v, err := fuse.Build[value](e, &exprBuilder{g: g, in: in})
	if err != nil {
		return nil, fmt.Errorf("cudnnx: %s: %w", e, err)
	}
	return v.t, g.err
}

// value is a built node: a tensor, or a number not yet in the graph.
type value struct {
	t *Tensor
	c float64
}

type exprBuilder struct {
	g  *Graph
	in []*Tensor
}

func (b *exprBuilder) Number(v float64) (value, error) { return value{c: v}, nil }
func (b *exprBuilder) Input(i int) (value, error)      { return value{t: b.in[i]}, nil }

// exprModes are the expression's operations as cuDNN's pointwise modes.
var exprModes = map[string]string{"+": "add", "-": "sub", "*": "mul", "/": "div", "neg": "neg", "abs": "abs", "exp": "exp",
	"log": "log", "max": "max", "min": "min", "pow": "pow", "relu": "relu", "sigmoid": "sigmoid", "sqrt": "sqrt", "tanh": "tanh"}

func (b *exprBuilder) Apply(op string, args []value) (value, error) {
	mode, ok := exprModes[op]
	if !ok {
		return value{}, fmt.Errorf("cuDNN's pointwise operations have no %s", op)
	}
	if constant(args) { // numbers alone: done here, rounded to fp32 as the kernel holds them
		x := make([]float64, len(args))
		for i, a := range args {
			x[i] = a.c
		}
		return value{c: float64(float32(fuse.Apply(op, x)))}, nil
	}
	g, rank := b.g, len(b.in[0].t.Dims) // every input has one shape
	t := func(a value) *Tensor {
		if a.t != nil {
			return a.t
		}
		return g.scalar(a.c, rank)
	}
	if len(args) == 1 {
		return value{t: g.Pointwise(mode, args[0].t)}, nil
	}
	x, y := args[0], args[1]
	if x.t == nil { // cuDNN broadcasts only its second operand
		switch op {
		case "+", "*", "max", "min":
			x, y = y, x
		case "-": // c − y = −y + c
			return value{t: g.Add(g.Pointwise("neg", y.t), g.scalar(x.c, rank))}, nil
		case "/": // c / y = (1/y)·c
			return value{t: g.Mul(g.Pointwise("reciprocal", y.t), g.scalar(x.c, rank))}, nil
		default:
			return value{}, fmt.Errorf("cuDNN's %s cannot take a number as its first operand", op)
		}
	}
	return value{t: g.Pointwise(mode, t(x), t(y))}, nil
}

func constant(args []value) bool {
	for _, a := range args {
		if a.t != nil {
			return false
		}
	}
	return true
}

// scalar is the by-value fp32 number v, broadcast over rank dimensions.
func (g *Graph) scalar(v float64, rank int) *Tensor {
	if math.IsNaN(v) {
		g.fail("the expression computes NaN from its numbers alone")
	}
	return g.Scalar(fmt.Sprintf("c%d", len(g.nodes)+len(g.tensors)), gpu.FP32, v, rank)
}
