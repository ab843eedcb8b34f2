package fusecmd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"cudarepl/fuse"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
	"cudarepl/nvrtc"
)

// Elements is how many elements Run runs on unless told: 2²⁶ fp32,
// 256 MiB an array.
const Elements = 1 << 26

// checkMax bounds how many elements Run checks against float64; past it,
// every k-th.
const checkMax = 1 << 22

// Run is runtime fusion, the REPL's "fuse EXPR": it writes the elementwise
// expression as one kernel and as one kernel an operation (package fuse),
// shows both, and compiles them with NVRTC. On a GPU it then checks both
// against the expression in float64, on n elements of each input drawn
// from [0.1, 2) (positive, so that log, sqrt and pow are defined), and times
// them beside the device-to-device copy. Without a GPU it shows the time a
// lesson recorded for the same kernel at n (Recorded), where one did;
// without NVRTC it says so, and that is all it can do: neither is an error.
func Run(env *lessons.Env, expr string, n int) error {
	x, err := fuse.Parse(expr)
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("fuse: %d elements; give at least 1", n)
	}
	if len(x.Inputs()) == 0 {
		return fmt.Errorf("fuse %s: the expression reads no input, so there is nothing to run it on", x)
	}
	fused := x.Kernel("fused")
	unfused, stages := x.Unfused("step")
	fmt.Fprintf(env.Out, "%s\n%s", fused, unfused)
	ways := &lessons.Table{Headers: []string{"way", "kernel", "operation", "reads", "writes", "bytes/element"},
		Right: []bool{false, false, false, false, false, true}}
	for _, s := range stages {
		ways.Rows = append(ways.Rows, []string{"unfused", s.Kernel, s.Op, strings.Join(s.Reads, " "), s.Writes, fmt.Sprint(s.Bytes())})
	}
	unfusedBytes := fuse.StagesBytes(stages)
	ways.Rows = append(ways.Rows, []string{"fused", "fused", "all", strings.Join(inputNames(x), " "), "out", fmt.Sprint(x.BytesPerElement())})
	ways.Notes = append(ways.Notes, "inputs: "+inputList(x.Inputs()), bytesBound(x, stages))
	env.PrintTable(ways)

	img, err := env.Compile(nvrtc.Source{Name: "fuse.cu", Code: fused + "\n" + unfused})
	switch {
	case errors.Is(err, gpu.ErrNoGPU) && !env.Live(): // no NVRTC here: what was shown is what there is
		fmt.Fprintf(env.Out, "Not compiled: %s.\n", strings.TrimPrefix(err.Error(), "gpu: "))
	case err != nil:
		return fmt.Errorf("fuse %s: %w", x, err)
	default:
		if r, ok := img.Kernel("fused"); ok {
			fmt.Fprintf(env.Out, "fused: %d registers/thread, %d B spilled (NVRTC %s, %s)\n", r.Registers, r.SpillStores, img.NVRTC, img.Arch)
		}
	}
	if !env.Live() {
		done := "compiled"
		if err != nil {
			done = "not compiled"
		}
		fmt.Fprintf(env.Out, "No GPU here (%v): %s, not run.\n", env.NoGPU, done)
		return showRecorded(env, x, n)
	}
	return run(env, x, img, stages, n, unfusedBytes)
}

// bytesBound says how much faster the bytes alone let the fused kernel
// be than the unfused stages: none where the expression is one operation,
// and so one kernel either way.
func bytesBound(x *fuse.Expr, stages []fuse.Stage) string {
	fused, unfused := x.BytesPerElement(), fuse.StagesBytes(stages)
	if len(stages) <= 1 || unfused <= fused {
		return fmt.Sprintf("bytes bound: one operation, so one kernel either way, moving %d bytes an element: fusing saves nothing here", fused)
	}
	return fmt.Sprintf("bytes bound: fused moves %d bytes an element, unfused %d, so fused can be at most %.2f× faster",
		fused, unfused, float64(unfused)/float64(fused))
}

// A recording is a lesson's recorded time of the kernel fuse writes for
// one expression, at Elements (Recorded).
type recording struct {
	expr    string // as canonical writes it
	lesson  string // the lesson's slug
	variant string // the kernel's name in the lesson's results
}

var recordings []recording

// Recorded says that the results recorded with lesson (a slug) hold, as
// variant, the time of the kernel fuse writes for expr, at Elements: fuse
// shows that time, labelled, where there is no GPU. A lesson calls it
// from its init; lesson 9 for its sweep's "fused at run time". It panics
// on an expression that does not parse, which is a programming error.
func Recorded(expr, lesson, variant string) {
	x, err := fuse.Parse(expr)
	if err != nil {
		panic(err)
	}
	recordings = append(recordings, recording{canonical(x), lesson, variant})
}

// canonical is x's text without spaces, the same for every way of
// spacing one expression: "sigmoid(a+b*c)".
func canonical(x *fuse.Expr) string { return strings.Join(strings.Fields(x.String()), "") }

// showRecorded shows the time a lesson recorded for the kernel fuse writes
// for x, at n elements, where one did.
func showRecorded(env *lessons.Env, x *fuse.Expr, n int) error {
	size := lessons.Size{n}.String()
	for _, rec := range recordings {
		if rec.expr != canonical(x) {
			continue
		}
		l, err := lessons.Find(rec.lesson)
		if err != nil {
			continue // the lesson is not in this program
		}
		for _, r := range l.Recorded().Results {
			if r.Kind != "bench" || r.Variant != rec.variant || r.Size != size || !r.Measured() {
				continue
			}
			env.PrintTable(&lessons.Table{
				Headers: []string{"way", "size", "time (µs)", r.Unit, "of the copy"},
				Right:   []bool{false, false, true, true, true},
				Rows: [][]string{{"fused", size, fmt.Sprintf("%.1f", 1000*r.MedianMs), fmt.Sprintf("%.0f", r.Throughput),
					lessons.RatioOf(r, lessons.Result{Throughput: r.Ceiling, Rounds: r.CeilingRounds}).Text("%.2f")}},
				Notes: []string{
					fmt.Sprintf("This kernel as lesson %d (%s) timed it, as %q: %s.", l.Number, l.Slug, rec.variant, lessons.ResultSet{Results: []lessons.Result{r}}.Source()),
					fmt.Sprintf("The unfused kernels were not recorded; lesson %d times its own unfused ways beside it.", l.Number),
				},
			})
			return nil
		}
	}
	return nil
}

// inputNames are the names the kernels' code gives x's inputs: x0, x1…
func inputNames(x *fuse.Expr) []string {
	names := make([]string, len(x.Inputs()))
	for i := range names {
		names[i] = fmt.Sprintf("x%d", i)
	}
	return names
}

func inputList(in []string) string {
	parts := make([]string, len(in))
	for i, name := range in {
		parts[i] = fmt.Sprintf("x%d = %s", i, name)
	}
	return strings.Join(parts, ", ")
}

// run checks and times the fused kernel and the unfused stages of x on n
// elements.
func run(env *lessons.Env, x *fuse.Expr, img *nvrtc.Image, stages []fuse.Stage, n, unfusedBytes int) error {
	d := env.Dev
	bytes := 4 * int64(n)
	need := bytes * int64(len(x.Inputs())+len(stages)+1)
	if free, _, err := d.MemInfo(); err == nil && need > free {
		return fmt.Errorf("fuse at n=%d needs %s of device memory; %s is free", n, mib(need), mib(free))
	}
	bufs := map[string]gpu.DevicePtr{}
	defer func() {
		for _, p := range bufs {
			d.Free(p)
		}
	}()
	r := rand.New(rand.NewPCG(uint64(n), 9))
	inputs := inputNames(x)
	in := make([][]float32, len(inputs))
	for i := range in {
		in[i] = make([]float32, n)
		for j := range in[i] {
			in[i][j] = float32(0.1 + 1.9*r.Float64())
		}
		p, err := gpu.Upload(d, in[i])
		if err != nil {
			return err
		}
		bufs[inputs[i]] = p
	}
	for _, s := range stages {
		p, err := d.Alloc(bytes)
		if err != nil {
			return err
		}
		bufs[s.Writes] = p
	}
	grid := gpu.Dim(min(gpu.Blocks(n, 256), d.Info().TwoWaves(256))) // grid-stride
	launch := func(name string, reads []string, writes string) (gpu.Op, error) {
		k, err := d.LoadKernel(img, name)
		if err != nil {
			return nil, err
		}
		var args []gpu.Arg
		for _, r := range reads {
			args = append(args, gpu.Ptr(bufs[r]))
		}
		args = append(args, gpu.Ptr(bufs[writes]), gpu.Int64(int64(n)))
		return gpu.Launch{Kernel: k, Grid: grid, Block: gpu.Dim(256), Args: args}, nil
	}
	fusedOp, err := launch("fused", inputs, "out")
	if err != nil {
		return err
	}
	var chain []gpu.Op
	for _, s := range stages {
		op, err := launch(s.Kernel, s.Reads, s.Writes)
		if err != nil {
			return err
		}
		chain = append(chain, op)
	}

	copyRate, err := env.Ceiling(lessons.CeilingCopy)
	if err != nil {
		return err
	}
	t := &lessons.Table{Headers: []string{"way", "launches", "bytes/element", "time (µs)", "GB/s", "of copy", "check"},
		Right: []bool{false, true, true, true, true, true, false}}
	var times []float64
	for _, w := range []struct {
		name  string
		ops   []gpu.Op
		bytes int
	}{{"unfused", chain, unfusedBytes}, {"fused", []gpu.Op{fusedOp}, x.BytesPerElement()}} {
		verdict, err := check(env, x, in, bufs["out"], w.ops)
		if err != nil {
			return err
		}
		tm, err := d.Bench(gpu.Bench{Name: "fuse " + w.name, Ops: [][]gpu.Op{w.ops}})
		if err != nil {
			return err
		}
		st := tm.Stats()
		gbs := st.Rate(float64(x.BytesPerElement())*float64(n)) / 1e9 // the useful bytes, the same for both
		times = append(times, st.Median.Seconds())
		t.Rows = append(t.Rows, []string{w.name, fmt.Sprint(len(w.ops)), fmt.Sprint(w.bytes), fmt.Sprintf("%.1f", st.Median.Seconds()*1e6),
			fmt.Sprintf("%.0f", gbs), lessons.RatioOf(lessons.Result{Throughput: gbs}, copyRate).String(), verdict})
	}
	t.Notes = append(t.Notes,
		fmt.Sprintf("n = %d; GB/s counts the fused kernel's %d bytes an element for both; the copy ran at %.0f GB/s",
			n, x.BytesPerElement(), copyRate.Throughput),
		fmt.Sprintf("fused is %.2f× faster than unfused (the bytes alone would make it %.2f×)", times[0]/times[1],
			float64(unfusedBytes)/float64(x.BytesPerElement())))
	env.PrintTable(t)
	return nil
}

// check poisons out, runs ops, and compares out with the expression in
// float64 on every element, or every k-th past checkMax. It returns
// "ok (every k-th)" or an error naming the first element wrong.
func check(env *lessons.Env, x *fuse.Expr, in [][]float32, out gpu.DevicePtr, ops []gpu.Op) (string, error) {
	n := len(in[0])
	if err := env.Dev.Run(append([]gpu.Op{gpu.Memset{Dst: out, Value: numeric.Poison32, Count: int64(n)}}, ops...)...); err != nil {
		return "", err
	}
	y, err := gpu.Download[float32](env.Dev, out, n)
	if err != nil {
		return "", err
	}
	step := max(1, n/checkMax)
	v := make([]float64, len(in))
	for i := 0; i < n; i += step {
		for j := range in {
			v[j] = float64(in[j][i])
		}
		want := x.Eval(v)
		got := float64(y[i])
		if math.IsNaN(want) && math.IsNaN(got) || got == want {
			continue
		}
		if math.IsNaN(got) || math.Abs(got-want) > numeric.TolFP32*math.Max(1, math.Abs(want)) {
			return "", fmt.Errorf("fuse %s: element %d is %g, float64 says %g (inputs %v)", x, i, got, want, v)
		}
	}
	if step > 1 {
		return fmt.Sprintf("ok (every %dth)", step), nil
	}
	return "ok", nil
}

// mib writes bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
