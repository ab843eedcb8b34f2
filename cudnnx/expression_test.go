package cudnnx

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"cudarepl/fuse"
	"cudarepl/gpu"
)

// TestExpression: the graph built from an expression computes what the
// expression does, in cudnnx's own float64 evaluation, including where
// numbers come first and cuDNN can only broadcast its second operand.
func TestExpression(t *testing.T) {
	for _, src := range []string{
		"sigmoid(a + b*c)",
		"2*a - 1",
		"1 - a",
		"3 / (abs(a) + 1)",
		"max(0.5, a) * min(b, -0.25) + relu(-a)",
		"tanh(a) + exp(-a*a) + sqrt(abs(b)) + log(abs(b) + 1) + pow(abs(a), 1.5)",
		"(2 + 3) * a + 4/8", // numbers alone are folded
	} {
		e, err := fuse.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		g := New("expr")
		sh := NCHW(1, 1, 4, 8)
		var in []*Tensor
		for _, name := range e.Inputs() {
			in = append(in, g.Tensor(name, gpu.FP32, sh))
		}
		y, err := g.Expression(e, in)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		y.Output(gpu.FP32)
		r := rand.New(rand.NewPCG(1, 2))
		vals := map[*Tensor][]float64{}
		for _, x := range in {
			v := make([]float64, sh.Span())
			for i := range v {
				v[i] = 4*r.Float64() - 2
			}
			vals[x] = v
		}
		got, err := g.Eval(vals)
		if err != nil {
			t.Errorf("%s: Eval: %v", src, err)
			continue
		}
		for i := range got[y] {
			x := make([]float64, len(in))
			for j, t := range in {
				x[j] = vals[t][i]
			}
			if want := e.Eval(x); math.Abs(got[y][i]-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("%s at %v: graph %v, expression %v", src, x, got[y][i], want)
				break
			}
		}
	}
}

func TestExpressionRefuses(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"sin(a) + b", "cuDNN's pointwise operations have no sin"},
		{"pow(2, a)", "cuDNN's pow cannot take a number as its first operand"},
		{"2 * 3", "has no inputs"},
	} {
		e, err := fuse.Parse(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		g := New("expr")
		var in []*Tensor
		for _, name := range e.Inputs() {
			in = append(in, g.Tensor(name, gpu.FP32, NCHW(1, 1, 2, 2)))
		}
		if _, err := g.Expression(e, in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
	e, _ := fuse.Parse("a + b")
	g := New("expr")
	a, b := g.Tensor("a", gpu.FP32, NCHW(1, 1, 2, 2)), g.Tensor("b", gpu.FP32, NCHW(1, 1, 2, 3))
	if _, err := g.Expression(e, []*Tensor{a, b}); err == nil || !strings.Contains(err.Error(), "differ in shape") {
		t.Errorf("inputs of two shapes: err = %v", err)
	}
	if _, err := g.Expression(e, []*Tensor{a}); err == nil || !strings.Contains(err.Error(), "has 2 inputs, not 1") {
		t.Errorf("one input of two: err = %v", err)
	}
}
