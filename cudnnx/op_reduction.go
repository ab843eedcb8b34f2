package cudnnx

import (
	"encoding/gob"
	"fmt"
	"math"
)

// reductionModes are the reduction modes a graph may use, with cuDNN's
// cudnnReduceTensorOp_t value.
var reductionModes = map[string]int{"add": 0, "mul": 1, "min": 2, "max": 3, "amax": 4, "avg": 5, "norm1": 6, "norm2": 7}

// Reduce reduces x with mode (add, mul, min, max, amax, avg, norm1 or
// norm2) over every dimension where dims is 1 and x's is not; the result
// is virtual.
func (g *Graph) Reduce(mode string, x *Tensor, dims []int64) *Tensor {
	if _, ok := reductionModes[mode]; !ok {
		g.fail("no reduction mode %q", mode)
		return x
	}
	if !g.owns(x) {
		return x
	}
	if len(dims) != len(x.t.Dims) {
		g.fail("reduce %s: %v has rank %d, x %v rank %d", mode, dims, len(dims), x.t.Dims, len(x.t.Dims))
		return x
	}
	for i := len(dims) - 1; i >= 0; i-- {
		if dims[i] != 1 && dims[i] != x.t.Dims[i] {
			g.fail("reduce %s: dimension %d is %d; it must be 1 (reduced) or %d (kept)", mode, i, dims[i], x.t.Dims[i])
			return x
		}
	}
	y := g.add(fmt.Sprintf("reduce_%s%d", mode, len(g.nodes)), g.compute, packed(dims), true)
	g.addNode(reduction{Mode: mode}, y, x)
	return y
}

// reduction reduces its operand over the dimensions its result has as 1.
type reduction struct{ Mode string }

func (op reduction) String() string { return "reduction " + op.Mode }
func (reduction) operands() int     { return 1 }
func (op reduction) check() error {
	if _, ok := reductionModes[op.Mode]; !ok {
		return fmt.Errorf("no reduction mode %q", op.Mode)
	}
	return nil
}

func (op reduction) build(b *builder, in []uintptr, out uintptr, compute int32) *desc {
	rd := b.desc(cdnReductionDesc).
		enum(cdnAttrReductionOperator, cdnTypeReduceOp, int32(reductionModes[op.Mode])).
		enum(cdnAttrReductionCompType, cdnTypeDataType, compute)
	return b.desc(cdnOpReductionDesc).after(rd).descs(cdnAttrOpReductionX, in[0]).
		descs(cdnAttrOpReductionY, out).descs(cdnAttrOpReductionDesc, rd.d)
}

func (op reduction) eval(y []float64, ys Shape, in []operand) {
	x, xs := in[0].v, in[0].s
	init := map[string]float64{"add": 0, "avg": 0, "norm1": 0, "norm2": 0, "mul": 1, "min": math.Inf(1), "max": math.Inf(-1), "amax": 0}[op.Mode]
	for i := range y {
		y[i] = init
	}
	count := float64(xs.Elements()) / float64(ys.Elements())
	xs.each(func(idx []int64, off int64) {
		o := ys.offsetBroadcast(idx)
		v := x[off]
		switch op.Mode {
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
		switch op.Mode {
		case "avg":
			y[i] /= count
		case "norm2":
			y[i] = math.Sqrt(y[i])
		}
	}
}

// The operation crosses to the worker inside a graph's nodes.
func init() { gob.Register(reduction{}) }
