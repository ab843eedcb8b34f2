// Package cudnnx builds cuDNN 9 operation graphs in Go, in the spirit of
// cudnn-frontend's Python API: tensors get unique ids by themselves,
// intermediate results are virtual (they never reach global memory) unless
// marked as outputs, and a graph runs as one gpu.Op.
//
//	g := cudnnx.New("conv+bias+relu")
//	x := g.Tensor("x", gpu.FP16, cudnnx.NHWC(32, 64, 112, 112))
//	w := g.Tensor("w", gpu.FP16, cudnnx.NHWC(64, 64, 3, 3))
//	b := g.Tensor("b", gpu.FP16, cudnnx.NHWC(1, 64, 1, 1))
//	y := g.Relu(g.Add(g.Conv(x, w, cudnnx.Same(3)), b)).Output(gpu.FP16)
//	op, err := g.Op(cudnnx.Bind{x: px, w: pw, b: pb, y: py}, cudnnx.Options{})
//
// Building the plan (heuristics, engine configurations, finalizing) happens
// in the process that owns the GPU context, in package gpu, which also keeps
// the plan cache: a second graph of the same shape reuses the plan.
package cudnnx

import (
	"fmt"
	"slices"
	"sort"
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
	nodes   []gpu.CudnnNode
	err     error
}

// Tensor is one tensor of a graph: an input, an output, or a virtual
// intermediate.
type Tensor struct {
	g *Graph
	t gpu.CudnnTensor
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
	t := &Tensor{g: g, t: gpu.CudnnTensor{UID: int64(len(g.tensors) + 1), Name: name, Type: dt,
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

func (g *Graph) owns(ts ...*Tensor) bool {
	for _, t := range ts {
		if t == nil || t.g != g {
			g.fail("a tensor from another graph (or nil) was passed in")
			return false
		}
	}
	return true
}

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
	g.nodes = append(g.nodes, gpu.CudnnNode{Op: "conv_fwd", In: []int64{x.t.UID, w.t.UID}, Out: y.t.UID, Compute: g.compute,
		Pad: []int64{pad, pad}, Stride: []int64{stride, stride}, Dilation: []int64{dil, dil}})
	return y
}

// Pointwise applies mode (see gpu.CudnnPointwiseModes) to x, or to x and b,
// element by element; b broadcasts over dimensions where it is 1. The
// result is virtual, shaped like x.
func (g *Graph) Pointwise(mode string, x *Tensor, b ...*Tensor) *Tensor {
	m, ok := gpu.CudnnPointwiseModes[mode]
	switch {
	case !ok:
		g.fail("no pointwise mode %q (have %s)", mode, strings.Join(pointwiseModes(), ", "))
		return x
	case len(b)+1 != m.Inputs:
		g.fail("pointwise %s takes %d inputs, not %d", mode, m.Inputs, len(b)+1)
		return x
	case !g.owns(append([]*Tensor{x}, b...)...):
		return x
	}
	in := []int64{x.t.UID}
	for _, bi := range b {
		if len(bi.t.Dims) != len(x.t.Dims) {
			g.fail("pointwise %s: %v and %v have different ranks", mode, x.t.Dims, bi.t.Dims)
			return x
		}
		for i, d := range bi.t.Dims {
			if d != 1 && d != x.t.Dims[i] {
				g.fail("pointwise %s: %v does not broadcast to %v", mode, bi.t.Dims, x.t.Dims)
				return x
			}
		}
		in = append(in, bi.t.UID)
	}
	dt := g.compute
	if mode == "cmp_ge" {
		dt = gpu.Bool
	}
	y := g.add(fmt.Sprintf("%s%d", mode, len(g.nodes)), dt, x.Shape(), true)
	g.nodes = append(g.nodes, gpu.CudnnNode{Op: "pointwise", Mode: mode, In: in, Out: y.t.UID, Compute: g.compute})
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
	y := g.Pointwise("gen_index", x)
	g.nodes[len(g.nodes)-1].Axis = int64(axis)
	return y
}

func pointwiseModes() []string {
	var out []string
	for m := range gpu.CudnnPointwiseModes {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
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
	g.nodes = append(g.nodes, gpu.CudnnNode{Op: "matmul", In: []int64{a.t.UID, b.t.UID}, Out: y.t.UID, Compute: g.compute})
	return y
}

// Reduce reduces x with mode (see gpu.CudnnReductionModes) over every
// dimension where dims is 1 and x's is not; the result is virtual.
func (g *Graph) Reduce(mode string, x *Tensor, dims []int64) *Tensor {
	if _, ok := gpu.CudnnReductionModes[mode]; !ok {
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
	g.nodes = append(g.nodes, gpu.CudnnNode{Op: "reduction", Mode: mode, In: []int64{x.t.UID}, Out: y.t.UID, Compute: g.compute})
	return y
}

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
	g.nodes = append(g.nodes, gpu.CudnnNode{Op: "sdpa_fwd", In: []int64{q.t.UID, k.t.UID, v.t.UID, sc.t.UID}, Out: o.t.UID, Compute: gpu.FP32})
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

// Spec is the graph as data for package gpu.
func (g *Graph) Spec() (gpu.CudnnGraph, error) {
	if g.err != nil {
		return gpu.CudnnGraph{}, g.err
	}
	if len(g.nodes) == 0 {
		return gpu.CudnnGraph{}, fmt.Errorf("cudnnx: graph %s has no operations", g.name)
	}
	s := gpu.CudnnGraph{Name: g.name, Nodes: append([]gpu.CudnnNode{}, g.nodes...)}
	outputs := 0
	for _, t := range g.tensors {
		s.Tensors = append(s.Tensors, t.t)
		if g.produced(t) && !t.t.Virtual {
			outputs++
		}
	}
	if outputs == 0 {
		return gpu.CudnnGraph{}, fmt.Errorf("cudnnx: graph %s has no output: mark one with Output", g.name)
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

func (g *Graph) run(b Bind, opt Options) (gpu.CudnnRun, error) {
	spec, err := g.Spec()
	if err != nil {
		return gpu.CudnnRun{}, err
	}
	r := gpu.CudnnRun{Graph: spec, Ptrs: map[int64]gpu.DevicePtr{}, Autotune: opt.Autotune, Candidate: opt.Candidate, NoCache: opt.NoCache}
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
	return gpu.CudnnOp(r), nil
}

// Plan builds (or finds in the cache) the graph's plan on dev without
// running it, and reports the candidates, the choice and the build time.
func (g *Graph) Plan(dev gpu.Device, b Bind, opt Options) (gpu.CudnnPlanReport, error) {
	r, err := g.run(b, opt)
	if err != nil {
		return gpu.CudnnPlanReport{}, err
	}
	out, err := dev.CallLibrary("cudnn", gpu.CudnnPlanCall(r))
	if err != nil {
		return gpu.CudnnPlanReport{}, err
	}
	return gpu.DecodeCudnnPlanReport(out)
}

// DropPlans empties dev's plan cache and frees cuDNN's workspace: the next
// plan is built, and its workspace allocated, afresh.
func DropPlans(dev gpu.Device) error {
	_, err := dev.CallLibrary("cudnn", gpu.CudnnDropCacheCall())
	return err
}

// ConvAlgorithms times each legacy forward-convolution algorithm on cv.
func ConvAlgorithms(dev gpu.Device, cv gpu.CudnnConv) ([]gpu.CudnnAlgoReport, error) {
	out, err := dev.CallLibrary("cudnn", gpu.CudnnConvAlgosCall(cv))
	if err != nil {
		return nil, err
	}
	return gpu.DecodeCudnnAlgoReports(out)
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
		op := n.Op
		if n.Mode != "" {
			op += " " + n.Mode
		}
		fmt.Fprintf(&b, "  %-16s %s → %s\n", op, strings.Join(in, ", "), name[n.Out])
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
