package cudnnx

import (
	"fmt"
	"strings"

	"cudarepl/gpu"
)

// Graph is an operation graph under construction. Methods that add to it
// never fail on their own: the first mistake is kept and returned by Spec,
// Op and Plan, so a graph reads as one expression.
type Graph struct {
	name    string
	compute gpu.DType
	tensors []*Tensor
	nodes   []node
	err     error
}

// Tensor is one tensor of a graph: an input, an output, or a virtual
// intermediate.
type Tensor struct {
	g *Graph
	t tensorSpec
}

// tensorSpec is a tensor as it crosses to the worker. Virtual tensors live
// only inside the fused kernels; by-value tensors are scalars passed with
// the call.
type tensorSpec struct {
	UID     int64
	Name    string
	Type    gpu.DType
	Dims    []int64
	Strides []int64
	Virtual bool
	ByValue bool
	Value   float64 // the scalar of a by-value tensor
}

// node is one operation of a graph: what it does, and its operands and
// result by tensor UID.
type node struct {
	Op      operation
	In      []int64
	Out     int64
	Compute gpu.DType // the type arithmetic is done in
}

// operation is one kind of cuDNN graph operation. Each lives in a file of
// its own (op_*.go) with everything about it.
type operation interface {
	// String names it in messages and listings, e.g. "pointwise relu".
	String() string
	// operands is how many input tensors it takes.
	operands() int
	// check catches, before cuDNN does, a mistake in its own settings.
	check() error
	// build makes its backend operation descriptor from its operands' and
	// its result's tensor descriptors, computing in compute; descriptors
	// it makes on the way go to b.keep.
	build(b *builder, in []uintptr, out uintptr, compute int32) *desc
	// eval computes its result y, shaped ys, on the CPU in float64.
	eval(y []float64, ys Shape, in []operand)
}

// operand is an operation's input for eval: its values in memory order,
// and its shape.
type operand struct {
	v []float64
	s Shape
}

// spec is a graph as data, as it crosses to the worker.
type spec struct {
	Name    string
	Tensors []tensorSpec
	Nodes   []node
}

// New starts a graph; arithmetic is done in fp32 unless SetCompute says
// otherwise.
func New(name string) *Graph { return &Graph{name: name, compute: gpu.FP32} }

// SetCompute sets the type the operations added after it compute in.
func (g *Graph) SetCompute(t gpu.DType) *Graph { g.compute = t; return g }

// Name is the graph's name.
func (g *Graph) Name() string { return g.name }

// Shape is a tensor's dimensions and strides, in elements. Dimensions are
// always in N, C, H, W order (or batch, rows, columns); the strides say how
// they are laid out in memory.
type Shape struct{ Dims, Strides []int64 }

// NCHW is a packed 4-D shape with W innermost.
func NCHW(n, c, h, w int) Shape {
	return packed([]int64{int64(n), int64(c), int64(h), int64(w)})
}

// NHWC is a packed 4-D shape with C innermost, the layout tensor cores want.
func NHWC(n, c, h, w int) Shape {
	return Shape{[]int64{int64(n), int64(c), int64(h), int64(w)}, []int64{int64(h * w * c), 1, int64(w * c), int64(c)}}
}

// Rows is a packed batch of row-major matrices, batch×rows×cols.
func Rows(batch, rows, cols int) Shape {
	return packed([]int64{int64(batch), int64(rows), int64(cols)})
}

// BHSD is a packed batch×heads×sequence×head-dimension shape, the layout
// of attention's q, k, v and output.
func BHSD(b, h, s, d int) Shape {
	return packed([]int64{int64(b), int64(h), int64(s), int64(d)})
}

// packed is dims laid out row-major, the last dimension contiguous.
func packed(dims []int64) Shape {
	strides := make([]int64, len(dims))
	st := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		strides[i] = st
		st *= dims[i]
	}
	return Shape{append([]int64{}, dims...), strides}
}

// nhwc reports whether s has channels innermost.
func (s Shape) nhwc() bool { return len(s.Strides) == 4 && s.Strides[1] == 1 && s.Dims[1] > 1 }

// Elements is how many elements the shape holds.
func (s Shape) Elements() int64 {
	n := int64(1)
	for _, d := range s.Dims {
		n *= d
	}
	return n
}

func (g *Graph) fail(format string, args ...any) {
	if g.err == nil {
		g.err = fmt.Errorf("cudnnx: graph %s: "+format, append([]any{g.name}, args...)...)
	}
}

func (g *Graph) add(name string, dt gpu.DType, s Shape, virtual bool) *Tensor {
	if len(s.Dims) != len(s.Strides) || len(s.Dims) == 0 {
		g.fail("tensor %s: %d dims and %d strides", name, len(s.Dims), len(s.Strides))
	}
	t := &Tensor{g: g, t: tensorSpec{UID: int64(len(g.tensors) + 1), Name: name, Type: dt,
		Dims: append([]int64{}, s.Dims...), Strides: append([]int64{}, s.Strides...), Virtual: virtual}}
	g.tensors = append(g.tensors, t)
	return t
}

// Tensor adds an input tensor that lives in device memory.
func (g *Graph) Tensor(name string, dt gpu.DType, s Shape) *Tensor { return g.add(name, dt, s, false) }

// Scalar adds a by-value scalar input: v travels with each execution, no
// device memory involved. Its shape is all ones, so it broadcasts.
func (g *Graph) Scalar(name string, dt gpu.DType, v float64, rank int) *Tensor {
	ones := make([]int64, rank)
	for i := range ones {
		ones[i] = 1
	}
	t := g.add(name, dt, Shape{ones, ones}, false)
	t.t.ByValue, t.t.Value = true, v
	return t
}

// Output marks t as a result, written to device memory as dt; until then an
// operation's result is virtual.
func (t *Tensor) Output(dt gpu.DType) *Tensor {
	t.t.Virtual, t.t.Type = false, dt
	return t
}

// Name is the tensor's name; UID its unique id in the graph.
func (t *Tensor) Name() string { return t.t.Name }

// UID is the tensor's unique id in the graph.
func (t *Tensor) UID() int64 { return t.t.UID }

// Shape is the tensor's dimensions and strides.
func (t *Tensor) Shape() Shape { return Shape{t.t.Dims, t.t.Strides} }

// Virtual reports whether the tensor stays inside the fused kernels.
func (t *Tensor) Virtual() bool { return t.t.Virtual }

// addNode adds op, computing y from in in the graph's compute type.
func (g *Graph) addNode(op operation, y *Tensor, in ...*Tensor) {
	uids := make([]int64, len(in))
	for i, t := range in {
		uids[i] = t.t.UID
	}
	g.nodes = append(g.nodes, node{Op: op, In: uids, Out: y.t.UID, Compute: g.compute})
}

func (g *Graph) owns(ts ...*Tensor) bool {
	for _, t := range ts {
		if t == nil || t.g != g {
			g.fail("a tensor from another graph (or nil) was passed in")
			return false
		}
	}
	return true
}

// spec is the graph as data for the worker, or the first mistake made
// building it.
func (g *Graph) spec() (spec, error) {
	if g.err != nil {
		return spec{}, g.err
	}
	if len(g.nodes) == 0 {
		return spec{}, fmt.Errorf("cudnnx: graph %s has no operations", g.name)
	}
	s := spec{Name: g.name, Nodes: append([]node{}, g.nodes...)}
	outputs := 0
	for _, t := range g.tensors {
		s.Tensors = append(s.Tensors, t.t)
		if g.produced(t) && !t.t.Virtual {
			outputs++
		}
	}
	if outputs == 0 {
		return spec{}, fmt.Errorf("cudnnx: graph %s has no output: mark one with Output", g.name)
	}
	return s, nil
}

func (g *Graph) produced(t *Tensor) bool {
	for _, n := range g.nodes {
		if n.Out == t.t.UID {
			return true
		}
	}
	return false
}

// Bind says where each non-virtual, non-scalar tensor lives.
type Bind map[*Tensor]gpu.DevicePtr

// Options chooses a graph's plan.
type Options struct {
	// Autotune times every candidate plan and keeps the fastest.
	Autotune bool
	// Candidate, without Autotune, takes the n-th engine configuration of
	// the heuristics that finalizes; 0 is the heuristics' first choice.
	Candidate int
	// NoCache builds the plan even if an identical graph has one cached.
	NoCache bool
}

// run is one execution of a graph: where its non-virtual tensors live, and
// which plan runs it.
type run struct {
	Graph spec
	Ptrs  map[int64]gpu.DevicePtr // by tensor UID; not for virtual or by-value tensors
	Options
}

func (g *Graph) run(b Bind, opt Options) (run, error) {
	sp, err := g.spec()
	if err != nil {
		return run{}, err
	}
	r := run{Graph: sp, Ptrs: map[int64]gpu.DevicePtr{}, Options: opt}
	var missing []string
	for _, t := range g.tensors {
		p, ok := b[t]
		switch {
		case t.t.Virtual && ok:
			return r, fmt.Errorf("cudnnx: graph %s: tensor %s is virtual and takes no memory", g.name, t.t.Name)
		case t.t.ByValue && ok:
			return r, fmt.Errorf("cudnnx: graph %s: tensor %s is a scalar and takes no memory", g.name, t.t.Name)
		case t.t.Virtual || t.t.ByValue:
		case !ok || p == 0:
			missing = append(missing, t.t.Name)
		default:
			r.Ptrs[t.t.UID] = p
		}
	}
	for t := range b {
		if t.g != g {
			return r, fmt.Errorf("cudnnx: graph %s: a binding names tensor %s of graph %s", g.name, t.t.Name, t.g.name)
		}
	}
	if len(missing) > 0 {
		return r, fmt.Errorf("cudnnx: graph %s: no memory bound for %s", g.name, strings.Join(missing, ", "))
	}
	return r, nil
}

// Op is the graph's execution with b's memory, as one gpu.Op: it runs in
// order with the device's other work, inside Run, Bench and Capture.
func (g *Graph) Op(b Bind, opt Options) (gpu.Op, error) {
	r, err := g.run(b, opt)
	if err != nil {
		return nil, err
	}
	return execOp{r}, nil
}

// Plan builds (or finds in the cache) the graph's plan on dev without
// running it, and reports the candidates, the choice and the build time.
func (g *Graph) Plan(dev gpu.Device, b Bind, opt Options) (PlanReport, error) {
	r, err := g.run(b, opt)
	if err != nil {
		return PlanReport{}, err
	}
	rep, err := dev.Call(planRequest{r})
	out, _ := rep.(PlanReport)
	return out, err
}

// DropPlans empties dev's plan cache and frees cuDNN's workspace: the next
// plan is built, and its workspace allocated, afresh.
func DropPlans(dev gpu.Device) error {
	_, err := dev.Call(dropPlansRequest{})
	return err
}

// String lists the graph's operations and tensors, one per line, saying
// which tensors live in device memory and which stay virtual.
func (g *Graph) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph %q: %d operations, %d tensors\n", g.name, len(g.nodes), len(g.tensors))
	name := map[int64]string{}
	for _, t := range g.tensors {
		name[t.t.UID] = t.t.Name
	}
	for _, n := range g.nodes {
		var in []string
		for _, u := range n.In {
			in = append(in, name[u])
		}
		fmt.Fprintf(&b, "  %-16s %s → %s\n", n.Op, strings.Join(in, ", "), name[n.Out])
	}
	for _, t := range g.tensors {
		role := "input"
		switch {
		case t.t.ByValue:
			role = fmt.Sprintf("scalar %g", t.t.Value)
		case t.t.Virtual:
			role = "virtual"
		case g.produced(t):
			role = "output"
		}
		fmt.Fprintf(&b, "  uid %-3d %-12s %-9s dims %-18s strides %-18s %s\n", t.t.UID, t.t.Name, t.t.Type,
			dimString(t.t.Dims), dimString(t.t.Strides), role)
	}
	return b.String()
}

func dimString(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "×")
}
