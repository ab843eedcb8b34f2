//go:build gpu

package cudnnx

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"cudarepl/fuse"
	"cudarepl/gpu"
	"cudarepl/internal/gputest"
)

// openGPU opens the GPU through a worker process, as cudarepl does, or
// skips the test with the reason.
func openGPU(t *testing.T) gpu.Device {
	t.Helper()
	dev := gputest.Open(t)
	if _, err := Version(); err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
	return dev
}

// check runs g on random inputs (uniform in lo…hi) and compares every
// output with Eval: ‖out − ref‖/‖ref‖ ≤ tol.
func check(t *testing.T, dev gpu.Device, g *Graph, lo, hi, tol float64, opt Options) PlanReport {
	t.Helper()
	inputs := map[*Tensor][]float64{}
	bind := Bind{}
	var outs []*Tensor
	for _, tn := range g.tensors {
		switch {
		case tn.t.ByValue, tn.t.Virtual:
		case g.produced(tn):
			outs = append(outs, tn)
		default:
			v := make([]float64, tn.Shape().Span())
			for i := range v {
				v[i] = lo + (hi-lo)*rand.Float64()
			}
			v = Round(tn.t.Type, v)
			inputs[tn] = v
			p, err := Upload(dev, tn.t.Type, v)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dev.Free(p) })
			bind[tn] = p
		}
	}
	for _, o := range outs {
		p, err := dev.Alloc(Bytes(o.t.Type, o.Shape()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Free(p) })
		bind[o] = p
	}
	rep, err := g.Plan(dev, bind, opt)
	if err != nil {
		t.Fatalf("%s: plan: %v", g.name, err)
	}
	op, err := g.Op(bind, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Run(op); err != nil {
		t.Fatalf("%s: run: %v", g.name, err)
	}
	ref, err := g.Eval(inputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		got, err := Download(dev, o.t.Type, bind[o], int(o.Shape().Span()))
		if err != nil {
			t.Fatal(err)
		}
		var num, den float64
		for i, r := range ref[o] {
			num += (got[i] - r) * (got[i] - r)
			den += r * r
		}
		rel := math.Sqrt(num / den)
		if !(rel <= tol) {
			t.Errorf("%s: output %s: relative error %.2e > %.0e", g.name, o.t.Name, rel, tol)
		} else {
			t.Logf("%-28s %-10s rel err %.1e (engine %d of %d candidates, %s, built in %s)", g.name, o.t.Name, rel,
				rep.ChosenCandidate().Engine, len(rep.Candidates), rep.Heuristics, rep.BuildTime)
		}
	}
	return rep
}

func convGraph(name string, dt gpu.DType, layout func(n, c, h, w int) Shape, n, c, h, w, k int, geo Conv2D) (*Graph, *Tensor) {
	g := New(name)
	x := g.Tensor("x", dt, layout(n, c, h, w))
	wt := g.Tensor("w", dt, layout(k, c, 3, 3))
	return g, g.Conv(x, wt, geo)
}

func TestGPUConvolution(t *testing.T) {
	dev := openGPU(t)
	g, y := convGraph("conv fp16 NHWC", gpu.FP16, NHWC, 2, 16, 10, 10, 32, Same(3))
	y.Output(gpu.FP16)
	check(t, dev, g, -1, 1, 1e-2, Options{})
	g, y = convGraph("conv fp32 NCHW stride 2", gpu.FP32, NCHW, 2, 8, 9, 7, 8, Conv2D{Pad: 1, Stride: 2, Dilation: 1})
	y.Output(gpu.FP32)
	check(t, dev, g, -1, 1, 1e-2, Options{})
	g, y = convGraph("conv fp16 NHWC dilated", gpu.FP16, NHWC, 1, 8, 12, 12, 16, Conv2D{Pad: 2, Stride: 1, Dilation: 2})
	y.Output(gpu.FP16)
	check(t, dev, g, -1, 1, 1e-2, Options{})
}

// TestGPUPointwise checks every pointwise mode as the epilogue of a
// convolution, where cuDNN's runtime fusion engines take it; the modes
// that build masks (a Bool, an index, a select of three inputs) are no
// epilogue, and TestGPUCausalSDPA checks them in the mask they make.
func TestGPUPointwise(t *testing.T) {
	dev := openGPU(t)
	var modes []string
	for m := range pointwiseModes {
		if m == "cmp_ge" || m == "gen_index" || m == "binary_select" {
			continue
		}
		modes = append(modes, m)
	}
	sort.Strings(modes)
	for _, mode := range modes {
		g, y := convGraph("conv→"+mode, gpu.FP16, NHWC, 1, 8, 6, 6, 8, Same(3))
		lo, hi := -0.3, 0.3
		switch mode {
		case "sqrt", "log", "rsqrt", "reciprocal", "pow":
			// Keep the conv output positive: positive inputs and weights.
			lo, hi = 0.05, 0.3
		}
		var out *Tensor
		if pointwiseModes[mode].Inputs == 2 {
			b := g.Tensor("b", gpu.FP16, NHWC(1, 8, 1, 1))
			out = g.Pointwise(mode, y, b)
		} else {
			out = g.Pointwise(mode, y)
		}
		out.Output(gpu.FP16)
		check(t, dev, g, lo, hi, 2e-2, Options{})
	}
}

func TestGPUFusedConvBiasRelu(t *testing.T) {
	dev := openGPU(t)
	g, y := convGraph("conv+bias+relu", gpu.FP16, NHWC, 2, 16, 10, 10, 32, Same(3))
	b := g.Tensor("b", gpu.FP16, NHWC(1, 32, 1, 1))
	g.Relu(g.Add(y, b)).Output(gpu.FP16)
	first := check(t, dev, g, -1, 1, 1e-2, Options{Autotune: true})
	var timed int
	for _, c := range first.Candidates {
		if c.Time > 0 {
			timed++
		}
	}
	if timed == 0 {
		t.Errorf("autotune timed no candidate: %+v", first.Candidates)
	}
	// The same graph again, built anew: a cache hit.
	g2, y2 := convGraph("conv+bias+relu", gpu.FP16, NHWC, 2, 16, 10, 10, 32, Same(3))
	b2 := g2.Tensor("b", gpu.FP16, NHWC(1, 32, 1, 1))
	g2.Relu(g2.Add(y2, b2)).Output(gpu.FP16)
	again := check(t, dev, g2, -1, 1, 1e-2, Options{Autotune: true})
	if !again.Cached || again.Key != first.Key {
		t.Errorf("rebuilt identical graph: cached %v, key %s vs %s; want a cache hit", again.Cached, again.Key, first.Key)
	}
	t.Logf("autotune: %d candidates, chose engine %d (%s); first build %s", len(first.Candidates), first.ChosenCandidate().Engine,
		first.ChosenCandidate().Time, first.BuildTime)
}

func TestGPUScalarAndMatmul(t *testing.T) {
	dev := openGPU(t)
	g, y := convGraph("conv·scalar", gpu.FP16, NHWC, 1, 8, 6, 6, 8, Same(3))
	g.Mul(y, g.Scalar("half", gpu.FP32, 0.5, 4)).Output(gpu.FP16)
	check(t, dev, g, -1, 1, 1e-2, Options{})

	g = New("matmul")
	a := g.Tensor("a", gpu.FP16, Rows(2, 64, 32))
	b := g.Tensor("b", gpu.FP16, Rows(2, 32, 48))
	g.Matmul(a, b).Output(gpu.FP32)
	check(t, dev, g, -1, 1, 1e-2, Options{})

	g = New("matmul+gelu")
	a = g.Tensor("a", gpu.FP16, Rows(1, 128, 64))
	b = g.Tensor("b", gpu.FP16, Rows(1, 64, 128))
	g.Gelu(g.Matmul(a, b)).Output(gpu.FP16)
	check(t, dev, g, -1, 1, 1e-2, Options{})

	g = New("matmul+row sums")
	a = g.Tensor("a", gpu.FP16, Rows(1, 64, 32))
	b = g.Tensor("b", gpu.FP16, Rows(1, 32, 64))
	g.Reduce("add", g.Matmul(a, b), []int64{1, 64, 1}).Output(gpu.FP32)
	check(t, dev, g, -1, 1, 1e-2, Options{})

	g = New("matmul+row max")
	a = g.Tensor("a", gpu.FP16, Rows(1, 64, 32))
	b = g.Tensor("b", gpu.FP16, Rows(1, 32, 64))
	g.Reduce("max", g.Matmul(a, b), []int64{1, 64, 1}).Output(gpu.FP32)
	check(t, dev, g, -1, 1, 1e-2, Options{})
}

// TestGPULegacyAlgorithms runs each legacy algorithm that supports a small
// convolution and checks its output.
func TestGPULegacyAlgorithms(t *testing.T) {
	dev := openGPU(t)
	for _, tc := range []struct {
		dt   gpu.DType
		nhwc bool
	}{{gpu.FP32, false}, {gpu.FP16, true}} {
		layout := NCHW
		if tc.nhwc {
			layout = NHWC
		}
		g, y := convGraph("legacy", tc.dt, layout, 2, 8, 12, 12, 16, Same(3))
		y.Output(tc.dt)
		var x, w *Tensor = g.tensors[0], g.tensors[1]
		xv := Round(tc.dt, randoms(x.Shape().Span()))
		wv := Round(tc.dt, randoms(w.Shape().Span()))
		ref, err := g.Eval(map[*Tensor][]float64{x: xv, w: wv})
		if err != nil {
			t.Fatal(err)
		}
		px, _ := Upload(dev, tc.dt, xv)
		pw, _ := Upload(dev, tc.dt, wv)
		py, _ := dev.Alloc(Bytes(tc.dt, y.Shape()))
		cv := LegacyConv{N: 2, C: 8, H: 12, W: 12, K: 16, R: 3, S: 3, Pad: 1, Stride: 1, Type: tc.dt, NHWC: tc.nhwc, X: px, Wt: pw, Y: py}
		algos, err := ConvAlgorithms(dev, cv)
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		for _, a := range algos {
			if a.Status != "ok" {
				t.Logf("%s %-26s %s", cv, a.Name, a.Status)
				continue
			}
			cv.Algo = a.Algo
			dev.Run(gpu.Memset{Dst: py, Value: 0x7fc00000, Count: Bytes(tc.dt, y.Shape()) / 4})
			if err := dev.Run(cv); err != nil {
				t.Fatalf("%s: %v", a.Name, err)
			}
			got, _ := Download(dev, tc.dt, py, int(y.Shape().Span()))
			var num, den float64
			for i, r := range ref[y] {
				num += (got[i] - r) * (got[i] - r)
				den += r * r
			}
			rel := math.Sqrt(num / den)
			if !(rel < 1e-2) {
				t.Errorf("%s %s: relative error %.2e", cv, a.Name, rel)
			}
			t.Logf("%s %-26s %8s  workspace %8d B  rel err %.1e", cv, a.Name, a.Time, a.Workspace, rel)
			ran++
		}
		if ran == 0 {
			t.Errorf("%s: no legacy algorithm ran", cv)
		}
		dev.Free(px)
		dev.Free(pw)
		dev.Free(py)
	}
}

func randoms(n int64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rand.Float64()*2 - 1
	}
	return v
}

// TestGPUNoEngine: a graph no engine takes fails with what was tried and
// the usual fixes.
func TestGPUNoEngine(t *testing.T) {
	dev := openGPU(t)
	g := New("conv fp64")
	x := g.Tensor("x", gpu.FP64, NCHW(1, 3, 8, 8))
	w := g.Tensor("w", gpu.FP64, NCHW(4, 3, 3, 3))
	g.SetCompute(gpu.FP64)
	y := g.Gelu(g.Conv(x, w, Same(3))).Output(gpu.FP64)
	px, _ := dev.Alloc(Bytes(gpu.FP64, x.Shape()))
	pw, _ := dev.Alloc(Bytes(gpu.FP64, w.Shape()))
	py, _ := dev.Alloc(Bytes(gpu.FP64, y.Shape()))
	_, err := g.Plan(dev, Bind{x: px, w: pw, y: py}, Options{})
	t.Logf("fp64 conv+gelu: %v", err)
	if err != nil && !strings.Contains(err.Error(), "Usual fixes") && !strings.Contains(err.Error(), "cudnnBackend") {
		t.Errorf("error %q names neither the cuDNN call nor the usual fixes", err)
	}
}

// TestGPUExpression runs lesson 9's expressions as graphs of pointwise
// operations alone, fp32, with no convolution or product to carry them:
// what cuDNN's runtime fusion makes of an elementwise expression. Measured
// on the H100 with cuDNN 9.14: an NCHW tensor of one channel finds no
// engine (rows and NHWC do), and a single row of 2²⁰ finds one whose launch
// fails, so a vector goes in as rows of 1024.
func TestGPUExpression(t *testing.T) {
	dev := openGPU(t)
	for _, sh := range []Shape{Rows(1, 1024, 1024)} {
		for _, src := range []string{"sigmoid(a + b*c)", "1 - a*0.5", "max(a, b) * tanh(c) / (abs(a) + 1)"} {
			e, err := fuse.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			g := New(src)
			var in []*Tensor
			for _, name := range e.Inputs() {
				in = append(in, g.Tensor(name, gpu.FP32, sh))
			}
			y, err := g.Expression(e, in)
			if err != nil {
				t.Fatal(err)
			}
			y.Output(gpu.FP32)
			rep := check(t, dev, g, -2, 2, 1e-5, Options{})
			t.Logf("%v %s: engine %d of %d candidates", sh.Dims, src, rep.ChosenCandidate().Engine, len(rep.Candidates))
		}
	}
}

// TestGPUCausalSDPA runs the causal attention graph, which cuDNN must
// recognise and fuse, and checks it against Eval.
func TestGPUCausalSDPA(t *testing.T) {
	dev := openGPU(t)
	for _, s := range []int{128, 100} {
		g := New("causal sdpa")
		sh := BHSD(1, 2, s, 64)
		q, k, v := g.Tensor("q", gpu.FP16, sh), g.Tensor("k", gpu.FP16, sh), g.Tensor("v", gpu.FP16, sh)
		g.CausalSDPA(q, k, v, 0.125)
		rep := check(t, dev, g, -1, 1, 1e-2, Options{})
		t.Logf("S=%d: %+v", s, rep)
	}
}

// TestGPUGraphOfCudnnWatchesItsMemory: a CUDA graph that captured a cuDNN
// graph's execution is refused once memory it uses is freed: an input, or
// cuDNN's workspace (DropPlans frees it).
func TestGPUGraphOfCudnnWatchesItsMemory(t *testing.T) {
	dev := openGPU(t)
	for _, free := range []string{"input", "workspace"} {
		g, y := convGraph("conv fp16 NHWC, captured", gpu.FP16, NHWC, 2, 16, 10, 10, 32, Same(3))
		y.Output(gpu.FP16)
		bind := Bind{}
		for _, tn := range g.tensors {
			if !tn.t.Virtual && !tn.t.ByValue {
				p, err := dev.Alloc(Bytes(tn.t.Type, tn.Shape()))
				if err != nil {
					t.Fatal(err)
				}
				bind[tn] = p
			}
		}
		op, err := g.Op(bind, Options{})
		if err != nil {
			t.Fatal(err)
		}
		graph, err := dev.Capture(op)
		if err != nil {
			t.Fatalf("Capture(%s) = %v", op.Name(), err)
		}
		if err := dev.Run(gpu.GraphOp{Graph: graph}); err != nil {
			t.Fatalf("replay = %v", err)
		}
		switch free {
		case "input":
			x := g.tensors[0]
			dev.Free(bind[x])
			delete(bind, x)
		case "workspace":
			if err := DropPlans(dev); err != nil {
				t.Fatal(err)
			}
		}
		if err := dev.Run(gpu.GraphOp{Graph: graph}); err == nil || !strings.Contains(err.Error(), "freed after it was captured") {
			t.Errorf("replay after its %s was freed = %v, want it refused", free, err)
		}
		dev.FreeGraph(graph)
		for _, p := range bind {
			dev.Free(p)
		}
	}
}
