package multigpu

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/nccl"
	"cudarepl/numeric"
	"cudarepl/plots"
)

// The data-parallel step's three ways of summing the gradients.
const (
	trainAlone   = "no all-reduce (one GPU's work, the floor)"
	trainAfter   = "all-reduce after the backward pass"
	trainOverlap = "all-reduce each layer's gradient as it is ready, on a second stream"
)

// trainModes are the ways, in table order.
var trainModes = []string{trainAlone, trainAfter, trainOverlap}

// mlp is a multilayer perceptron of Layers square layers of Hidden
// units with ReLU after each, trained with a squared error on a batch of
// Batch rows a GPU.
type mlp struct{ Layers, Hidden, Batch int }

// timedMLPs are the ones the step times: 64 MiB of gradient a layer to
// sum, and a batch of 512 rows a GPU, then four times as many, so that the
// same all-reduces sit under four times the products.
var timedMLPs = []mlp{{Layers: 4, Hidden: 4096, Batch: 512}, {Layers: 4, Hidden: 4096, Batch: 2048}}

// checkedMLP is the one the step checks against the CPU.
var checkedMLP = mlp{Layers: 3, Hidden: 64, Batch: 16}

// learningRate is the step's SGD rate.
const learningRate = 0.5

// net is an mlp's buffers on every GPU, all row-major float32: the layers'
// inputs x[0] … x[L] (x[0] the batch) and products z[1] … z[L], the
// target t, two gradients g for the backward pass to pass between layers,
// and each layer's weights w and their gradient dw.
type net struct {
	m                      mlp
	x, z, w, dw            [][]gpu.DevicePtr // [layer][GPU]
	t, g0, g1              []gpu.DevicePtr   // [GPU]
	reluF, reluB, mse, sgd gpu.Kernel
}

// newNet allocates m's buffers on every GPU of g, loads its kernels, and
// fills the weights (the same on every GPU), each GPU's batch and target.
// It returns what it wrote, for the CPU to check against.
func newNet(env *lessons.Env, g *gpus, m mlp) (*net, [][]float32, [][]float32, [][]float32, error) {
	n, L, bh, hh := g.n(), m.Layers, int64(m.Batch*m.Hidden), int64(m.Hidden*m.Hidden)
	nt := &net{m: m, x: make([][]gpu.DevicePtr, L+1), z: make([][]gpu.DevicePtr, L+1), w: make([][]gpu.DevicePtr, L+1), dw: make([][]gpu.DevicePtr, L+1)}
	var err error
	for l := 0; l <= L; l++ {
		if nt.x[l], err = g.allocEach(4 * bh); err != nil {
			return nil, nil, nil, nil, err
		}
		if l == 0 {
			continue
		}
		if nt.z[l], err = g.allocEach(4 * bh); err != nil {
			return nil, nil, nil, nil, err
		}
		if nt.w[l], err = g.allocEach(4 * hh); err != nil {
			return nil, nil, nil, nil, err
		}
		if nt.dw[l], err = g.allocEach(4 * hh); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	for _, p := range []*[]gpu.DevicePtr{&nt.t, &nt.g0, &nt.g1} {
		if *p, err = g.allocEach(4 * bh); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	src, err := kernels.Source("multigpu.cu")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	img, err := env.Compile(src)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	for i, d := range g.devs {
		for _, k := range []struct {
			to   *gpu.Kernel
			name string
		}{{&nt.reluF, "relu_fwd"}, {&nt.reluB, "relu_bwd"}, {&nt.mse, "mse_grad"}, {&nt.sgd, "sgd_step"}} {
			if *k.to, err = d.LoadKernel(img, k.name); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("GPU %d: %w", i, err)
			}
		}
	}
	// Small weights, within ±2/Hidden, the same on every GPU. (Activations
	// shrink layer by layer at this scale; the step times do not depend on
	// the values.)
	scale := float32(2 / float64(m.Hidden))
	ws := make([][]float32, L+1)
	for l := 1; l <= L; l++ {
		ws[l] = random(int(hh), scale)
	}
	xs, ts := make([][]float32, n), make([][]float32, n)
	for i, d := range g.devs {
		xs[i], ts[i] = random(int(bh), 1), random(int(bh), 1)
		if err := gpu.WriteSlice(d, nt.x[0][i], xs[i]); err != nil {
			return nil, nil, nil, nil, err
		}
		if err := gpu.WriteSlice(d, nt.t[i], ts[i]); err != nil {
			return nil, nil, nil, nil, err
		}
		for l := 1; l <= L; l++ {
			if err := gpu.WriteSlice(d, nt.w[l][i], ws[l]); err != nil {
				return nil, nil, nil, nil, err
			}
		}
	}
	return nt, ws, xs, ts, nil
}

// random is n values uniform in [−scale, scale).
func random(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = (rand.Float32()*2 - 1) * scale
	}
	return v
}

// elementwise launches k over n floats with args before n and extra after.
func elementwise(k gpu.Kernel, n int64, ptrs []gpu.DevicePtr, extra ...gpu.Arg) gpu.Launch {
	var args []gpu.Arg
	for _, p := range ptrs {
		args = append(args, gpu.Ptr(p))
	}
	args = append(append(args, gpu.Int64(n)), extra...)
	return gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(int(n), 256)), Block: gpu.Dim(256), Args: args}
}

// The events the step's streams wait on: a layer's gradient is ready
// (its number), and the second stream's all-reduces are done.
const allReduced = 1000

// ops is one training step in mode, for every GPU: forward, the loss's
// gradient, backward layer by layer, the gradients summed across the GPUs
// (or not, in trainAlone), and the weights moved by SGD.
func (nt *net) ops(mode string, n int) []gpu.DevOp {
	m, L := nt.m, nt.m.Layers
	bh, hh := int64(m.Batch*m.Hidden), int64(m.Hidden*m.Hidden)
	var out []gpu.DevOp
	each := func(f func(i int) gpu.Op) {
		for i := range n {
			if op := f(i); op != nil {
				out = append(out, gpu.DevOp{Device: i, Op: op})
			}
		}
	}
	allReduce := func(l, stream int) gpu.DevOp {
		return gpu.DevOp{Device: -1, Op: nccl.Collective{Kind: nccl.AllReduce, Devices: n, Send: nt.dw[l], Recv: nt.dw[l], Count: hh, Stream: stream}}
	}
	for l := 1; l <= L; l++ {
		each(func(i int) gpu.Op {
			return blas.GEMM{M: m.Batch, N: m.Hidden, K: m.Hidden, A: nt.x[l-1][i], B: nt.w[l][i], C: nt.z[l][i], Alpha: 1, Type: gpu.FP32}
		})
		each(func(i int) gpu.Op { return elementwise(nt.reluF, bh, []gpu.DevicePtr{nt.z[l][i], nt.x[l][i]}) })
	}
	// The loss is the squared error summed over the whole batch, every
	// GPU's rows, over its size: each GPU's gradient is its share.
	each(func(i int) gpu.Op {
		return elementwise(nt.mse, bh, []gpu.DevicePtr{nt.x[L][i], nt.t[i], nt.g0[i]}, gpu.Float32(1/float32(m.Batch*n)))
	})
	g, gNext := nt.g0, nt.g1
	for l := L; l >= 1; l-- {
		each(func(i int) gpu.Op { return elementwise(nt.reluB, bh, []gpu.DevicePtr{g[i], nt.z[l][i]}) })
		each(func(i int) gpu.Op {
			return blas.GEMM{M: m.Hidden, N: m.Hidden, K: m.Batch, A: nt.x[l-1][i], B: g[i], C: nt.dw[l][i], TransA: true, Alpha: 1, Type: gpu.FP32}
		})
		if mode == trainOverlap {
			each(func(int) gpu.Op { return gpu.Record{Event: l} })
			each(func(int) gpu.Op { return gpu.OnStream{Stream: 1, Op: gpu.WaitFor{Event: l}} })
			// Wrapped in OnStream so that a timeline marks it on stream 1, where it runs.
			out = append(out, gpu.DevOp{Device: -1, Op: gpu.OnStream{Stream: 1, Op: allReduce(l, 1).Op}})
		}
		if l > 1 {
			each(func(i int) gpu.Op {
				return blas.GEMM{M: m.Batch, N: m.Hidden, K: m.Hidden, A: g[i], B: nt.w[l][i], C: gNext[i], TransB: true, Alpha: 1, Type: gpu.FP32}
			})
			g, gNext = gNext, g
		}
	}
	switch mode {
	case trainAfter:
		for l := L; l >= 1; l-- {
			out = append(out, allReduce(l, 0))
		}
	case trainOverlap:
		each(func(int) gpu.Op { return gpu.OnStream{Stream: 1, Op: gpu.Record{Event: allReduced}} })
		each(func(int) gpu.Op { return gpu.WaitFor{Event: allReduced} })
	}
	for l := 1; l <= L; l++ {
		each(func(i int) gpu.Op {
			return elementwise(nt.sgd, hh, []gpu.DevicePtr{nt.w[l][i], nt.dw[l][i]}, gpu.Float32(learningRate))
		})
	}
	return out
}

// trainStep checks one step against the CPU, then times the three modes
// and draws the overlapped step's timeline on GPU 0.
func trainStep(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := measuredMulti(env, l, step, "check|bench|span", func() ([]lessons.Result, error) { return measureTrain(env, l, step) })
	if !ok {
		return err
	}
	return showTrain(env, l, step, rs)
}

// measureTrain checks the small MLP's step, then times the large ones' in
// each mode, and records, for the smaller batch, the timeline of the step
// without an all-reduce and of the overlapped one.
func measureTrain(env *lessons.Env, l *lessons.Lesson, step string) ([]lessons.Result, error) {
	g, err := openGPUs(env, 0)
	if err != nil {
		return nil, err
	}
	defer g.free()
	if err := haveNCCL(env); err != nil {
		return nil, err
	}
	n := g.n()
	check, err := checkTrain(env, g, checkedMLP)
	if err != nil {
		return nil, fmt.Errorf("the check of a step of %s: %w", checkedMLP, err)
	}
	check.Lesson, check.Step, check.Kind, check.Variant = l.Slug, step, "check", trainOverlap
	check.Size, check.DType = checkedMLP.String(), "float32"
	rs := []lessons.Result{env.Record(withDetail(check, multiDetail{GPUs: n}))}
	total, done := len(timedMLPs)*len(trainModes)+len(timelineModes), 0
	for bi, m := range timedMLPs {
		g.free()
		nt, _, _, _, err := newNet(env, g, m)
		if err != nil {
			return rs, err
		}
		alone := 0.0
		for _, mode := range trainModes {
			progress(env, done, total, mode+", "+m.String())
			done++
			steps := nt.ops(mode, n)
			st, per, err := timed(env, gpu.Multi{Devices: n, Steps: steps, Warmup: 3, Reps: 10})
			if err != nil {
				return rs, fmt.Errorf("%s, %s: %w", mode, m, err)
			}
			r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "bench", Variant: mode, Size: m.String(), Dims: []int{m.Layers, m.Hidden, m.Batch},
				DType: "float32", Unit: "steps/s", Throughput: 1 / st.Median.Seconds(), Passed: true}.WithTimes(st)
			d := multiDetail{GPUs: n, Bytes: 4 * int64(m.Layers*m.Hidden*m.Hidden), Steps: len(steps), PerGPU: per}
			if mode == trainAlone {
				alone = r.MedianMs
			} else if alone > 0 {
				d.Ratio, d.Against = r.MedianMs/alone, trainAlone
			}
			rs = append(rs, env.Record(withDetail(r, d)))
		}
		if bi > 0 {
			continue
		}
		for _, mode := range timelineModes {
			progress(env, done, total, "the timeline of "+mode)
			done++
			res, err := gpu.RunMulti(env.Dev, gpu.Multi{Devices: n, Steps: nt.ops(mode, n), Warmup: 2, Reps: 1, Timeline: true})
			if err != nil {
				return rs, fmt.Errorf("the timeline of %s: %w", mode, err)
			}
			for i, spans := range res.Spans {
				for k, s := range spans {
					kind := spanKind(s.Op)
					if kind == "" {
						continue
					}
					rs = append(rs, env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "span", Variant: mode,
						Size: fmt.Sprintf("GPU %d, stream %d, op %d", i, s.Stream, k), Dims: []int{i, s.Stream, k}, DType: kind,
						MinMs: float64(s.Start) / 1e6, MaxMs: float64(s.End) / 1e6, Detail: s.Op, Passed: true}))
				}
			}
		}
	}
	progress(env, total, total, "")
	return rs, nil
}

// timelineModes are the modes whose step is drawn as a timeline: the
// floor, and the overlap, whose products can be set beside the floor's.
var timelineModes = []string{trainAlone, trainOverlap}

// spanKind is the kind of work an op's name says, for the timeline's
// colours; "" for the events, which take no time.
func spanKind(op string) string {
	switch {
	case strings.Contains(op, "gemm"):
		return kindProduct
	case strings.Contains(op, "all-reduce"):
		return kindAllReduce
	case strings.Contains(op, "relu"), strings.Contains(op, "mse"), strings.Contains(op, "sgd"):
		return kindElementwise
	}
	return ""
}

// The kinds of work a timeline tells apart.
const (
	kindProduct     = "matrix product (cuBLAS)"
	kindAllReduce   = "all-reduce (NCCL)"
	kindElementwise = "elementwise kernel"
)

// String names the MLP's shape.
func (m mlp) String() string {
	return fmt.Sprintf("%d layers of %d×%d, %d rows a GPU", m.Layers, m.Hidden, m.Hidden, m.Batch)
}

// checkTrain runs one overlapped step of m and compares every GPU's summed
// gradients and updated weights with the CPU's, in float64.
func checkTrain(env *lessons.Env, g *gpus, m mlp) (lessons.Result, error) {
	n := g.n()
	nt, ws, xs, ts, err := newNet(env, g, m)
	if err != nil {
		return lessons.Result{}, err
	}
	if _, err := gpu.RunMulti(env.Dev, gpu.Multi{Devices: n, Steps: nt.ops(trainOverlap, n), Warmup: 0, Reps: 1}); err != nil {
		return lessons.Result{}, err
	}
	dw := cpuGradients(m, ws, xs, ts)
	tol := numeric.TolFP32Sum(max(m.Batch*n, m.Hidden))
	res := lessons.Result{Passed: true, Tolerance: tol}
	for l := 1; l <= m.Layers; l++ {
		want := make([]float64, len(dw[l]))
		for j, v := range dw[l] {
			want[j] = float64(ws[l][j]) - learningRate*v
		}
		for i, d := range g.devs {
			for _, c := range []struct {
				name string
				p    gpu.DevicePtr
				want []float64
			}{{fmt.Sprintf("GPU %d's dW%d", i, l), nt.dw[l][i], dw[l]}, {fmt.Sprintf("GPU %d's W%d after the step", i, l), nt.w[l][i], want}} {
				got, err := gpu.Download[float32](d, c.p, len(c.want))
				if err != nil {
					return res, err
				}
				st, err := numeric.Compare(c.name, got, c.want, []int{m.Hidden, m.Hidden}, tol)
				res.MaxRelErr = max(res.MaxRelErr, st.MaxRelErr)
				if err != nil {
					res.Passed, res.Outcome = false, err.Error()
					return res, nil
				}
			}
		}
	}
	return res, nil
}

// cpuGradients is each layer's weight gradient summed over the GPUs'
// batches, in float64: what the all-reduce leaves on every GPU.
func cpuGradients(m mlp, ws [][]float32, xs, ts [][]float32) [][]float64 {
	L, H, B, n := m.Layers, m.Hidden, m.Batch, len(xs)
	dw := make([][]float64, L+1)
	for l := 1; l <= L; l++ {
		dw[l] = make([]float64, H*H)
	}
	for gi := range n {
		x := make([][]float64, L+1)
		z := make([][]float64, L+1)
		x[0] = widen(xs[gi])
		for l := 1; l <= L; l++ {
			z[l] = matmul(x[l-1], widen(ws[l]), B, H, H, false, false)
			x[l] = make([]float64, B*H)
			for j, v := range z[l] {
				x[l][j] = max(v, 0)
			}
		}
		g := make([]float64, B*H)
		for j := range g {
			g[j] = (x[L][j] - float64(ts[gi][j])) / float64(B*n)
		}
		for l := L; l >= 1; l-- {
			for j := range g {
				if z[l][j] <= 0 {
					g[j] = 0
				}
			}
			d := matmul(x[l-1], g, H, H, B, true, false)
			for j, v := range d {
				dw[l][j] += v
			}
			if l > 1 {
				g = matmul(g, widen(ws[l]), B, H, H, false, true)
			}
		}
	}
	return dw
}

// widen is v in float64.
func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// matmul is op(a)·op(b), M×N, row-major, K the inner size: op(a) is a or,
// with ta, the transpose of a stored K×M; op(b) is b or, with tb, the
// transpose of b stored N×K.
func matmul(a, b []float64, M, N, K int, ta, tb bool) []float64 {
	c := make([]float64, M*N)
	for i := range M {
		for k := range K {
			av := a[i*K+k]
			if ta {
				av = a[k*M+i]
			}
			for j := range N {
				bv := b[k*N+j]
				if tb {
					bv = b[j*K+k]
				}
				c[i*N+j] += av * bv
			}
		}
	}
	return c
}

// showTrain prints the check, the three modes' step times against the
// floor at each batch, what GPU 0's timelines hold, and draws them.
func showTrain(env *lessons.Env, l *lessons.Lesson, step string, rs []lessons.Result) error {
	var benches, spans []lessons.Result
	for _, r := range rs {
		switch r.Kind {
		case "check":
			verdict := "passed"
			if !r.Passed {
				verdict = "FAILED: " + r.Outcome
			}
			fmt.Fprintf(env.Out, "One step of %s, checked on every GPU against the CPU's float64 (summed gradients and updated weights): %s, worst relative error %.1e (tolerance %.0e).\n",
				r.Size, verdict, r.MaxRelErr, r.Tolerance)
		case "bench":
			benches = append(benches, r)
		case "span":
			spans = append(spans, r)
		}
	}
	if len(benches) == 0 {
		return nil
	}
	var sizes []string
	by := map[string]map[string]lessons.Result{}
	gpus := 0
	for _, r := range benches {
		if by[r.Size] == nil {
			by[r.Size] = map[string]lessons.Result{}
			sizes = append(sizes, r.Size)
		}
		by[r.Size][r.Variant] = r
		if d, err := detailOf(r); err == nil {
			gpus = d.GPUs
		}
	}
	t := &lessons.Table{Headers: []string{"gradients summed"}, Right: []bool{false}}
	for _, sz := range sizes {
		rows := sz[strings.LastIndex(sz, ", ")+2:]
		t.Headers = append(t.Headers, rows+": step (ms)", "× no all-reduce")
		t.Right = append(t.Right, true, true)
	}
	for _, mode := range trainModes {
		row := []string{mode}
		for _, sz := range sizes {
			r, ok := by[sz][mode]
			if !ok {
				row = append(row, "—", "—")
				continue
			}
			ratio := "1.00"
			if d, err := detailOf(r); err == nil && d.Ratio > 0 {
				ratio = fmt.Sprintf("%.2f", d.Ratio)
			} else if mode != trainAlone {
				ratio = "—"
			}
			row = append(row, fmt.Sprintf("%.3f (%.3f–%.3f)", r.MedianMs, r.MinMs, r.MaxMs), ratio)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("4 layers of 4096×4096 on each of %d GPUs, fp32 products by cuBLAS; each figure the median of %d steps (the lowest and highest in brackets), a step timed on each GPU from an event recorded before its work is queued to one after its last operation, the longest of the GPUs' times.",
		gpus, benches[0].Reps), env.About(benches))
	env.PrintTable(t)
	if len(spans) == 0 {
		return nil
	}
	showSpans(env, spans)
	fig := plots.Timeline{Title: "One training step on GPU 0, " + timedMLPs[0].String(), Subtitle: lessons.ResultSet{Results: spans}.Source(), XLabel: "time (ms)",
		Lanes: []string{"no all-reduce: stream 0", "overlapped: stream 0", "overlapped: stream 1 (all-reduce)"}}
	for _, s := range spans {
		if len(s.Dims) < 2 || s.Dims[0] != 0 {
			continue
		}
		lane := 0
		if s.Variant == trainOverlap {
			lane = 1 + s.Dims[1]
		}
		fig.Spans = append(fig.Spans, plots.Span{Lane: lane, Kind: s.DType, Start: s.MinMs, End: s.MaxMs})
	}
	return env.Figure(l, step, fig)
}

// showSpans sums what GPU 0's timelines hold, a row a mode: the time its
// products, elementwise kernels and all-reduces took, and how long the
// step went on after its last product.
func showSpans(env *lessons.Env, spans []lessons.Result) {
	t := &lessons.Table{Headers: []string{"GPU 0, one step", "products (ms)", "elementwise (ms)", "all-reduces (ms)", "last product ends (ms)", "step ends (ms)"},
		Right: []bool{false, true, true, true, true, true}}
	for _, mode := range timelineModes {
		sums := map[string]float64{}
		lastProduct, end := 0.0, 0.0
		for _, s := range spans {
			if s.Variant != mode || len(s.Dims) < 2 || s.Dims[0] != 0 {
				continue
			}
			sums[s.DType] += s.MaxMs - s.MinMs
			end = max(end, s.MaxMs)
			if s.DType == kindProduct {
				lastProduct = max(lastProduct, s.MaxMs)
			}
		}
		if end == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{mode, fmt.Sprintf("%.3f", sums[kindProduct]), fmt.Sprintf("%.3f", sums[kindElementwise]),
			fmt.Sprintf("%.3f", sums[kindAllReduce]), fmt.Sprintf("%.3f", lastProduct), fmt.Sprintf("%.3f", end)})
	}
	t.Notes = append(t.Notes, "From CUDA events recorded around each operation of one step on GPU 0, "+timedMLPs[0].String()+"; times from the step's start.")
	env.PrintTable(t)
}
