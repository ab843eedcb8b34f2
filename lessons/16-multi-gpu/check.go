package multigpu

import (
	"fmt"
	"math/rand/v2"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/nccl"
	"cudarepl/numeric"
)

// checkCounts are the floats a GPU the checks use, as multiples of the
// number of GPUs: one each, an odd number that leaves chunks unaligned to
// float4, and a size past a megabyte.
var checkCounts = []int64{1, 1001, 262147}

// checkAll runs every collective and both hand-written rings once on
// fresh inputs and compares what each GPU holds with the float64 sum (or
// the gathered inputs) worked out on the CPU.
func checkAll(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, ok, err := measuredMulti(env, l, step, "check", func() ([]lessons.Result, error) { return runChecks(env, l, step) })
	if !ok {
		return err
	}
	t := &lessons.Table{Headers: []string{"what", "floats a GPU", "GPUs", "worst relative error", "tolerance", ""},
		Right: []bool{false, true, true, true, true, false}}
	failed := 0
	for _, r := range rs {
		d, _ := detailOf(r)
		verdict := "passed"
		if !r.Passed {
			verdict, failed = "FAILED: "+r.Outcome, failed+1
		}
		t.Rows = append(t.Rows, []string{r.Variant, fmt.Sprint(r.Dims[0]), fmt.Sprint(d.GPUs),
			fmt.Sprintf("%.1e", r.MaxRelErr), fmt.Sprintf("%.0e", r.Tolerance), verdict})
	}
	t.Notes = append(t.Notes, "Each GPU's inputs random, normally distributed, so that their float32 sums round; every GPU's output checked against the CPU's float64 sum (all-gather: the inputs themselves).",
		env.About(rs))
	env.PrintTable(t)
	if failed > 0 {
		return fmt.Errorf("%s failed", lessons.Count(failed, "check"))
	}
	return nil
}

// runChecks checks each way of summing at each count.
func runChecks(env *lessons.Env, l *lessons.Lesson, step string) ([]lessons.Result, error) {
	g, err := openGPUs(env, 0)
	if err != nil {
		return nil, err
	}
	defer g.free()
	n := g.n()
	largest := int64(n) * checkCounts[len(checkCounts)-1]
	r, err := newRing(env, g, largest)
	if err != nil {
		return nil, err
	}
	recv, err := g.allocEach(4 * largest * int64(n))
	if err != nil {
		return nil, err
	}
	what := []string{nccl.AllReduce.String(), nccl.AllGather.String(), nccl.ReduceScatter.String(), ringCopy, ringPeer}
	if ok, from, to := g.reachesPrevious(); !ok {
		fmt.Fprintf(env.Out, "%s is not checked: GPU %d cannot read GPU %d's memory directly (no peer access between them).\n", ringPeer, from, to)
		what = what[:len(what)-1]
	}
	if err := haveNCCL(env); err != nil {
		fmt.Fprintf(env.Out, "%v; only the rings are checked.\n", err)
		what = what[3:]
	}
	var rs []lessons.Result
	for _, m := range checkCounts {
		count := m * int64(n)
		for _, w := range what {
			res, err := checkOne(env, g, r, recv, w, count)
			if err != nil {
				return rs, fmt.Errorf("%s of %d floats a GPU: %w", w, count, err)
			}
			res.Lesson, res.Step, res.Kind, res.Variant = l.Slug, step, "check", w
			res.Size, res.Dims, res.DType = fmt.Sprintf("%d floats a GPU", count), []int{int(count)}, "float32"
			rs = append(rs, env.Record(withDetail(res, multiDetail{GPUs: n, Bytes: 4 * count})))
		}
	}
	return rs, nil
}

// checkOne runs w once over count floats a GPU (a collective's send
// count for the all-reduce and the ring, its count for the others as the
// Collective takes it) and checks every GPU's output.
func checkOne(env *lessons.Env, g *gpus, r *ring, recv []gpu.DevicePtr, w string, count int64) (lessons.Result, error) {
	n := g.n()
	kind := map[string]nccl.Kind{nccl.AllReduce.String(): nccl.AllReduce, nccl.AllGather.String(): nccl.AllGather,
		nccl.ReduceScatter.String(): nccl.ReduceScatter}[w]
	c := nccl.Collective{Kind: kind, Devices: n, Send: r.data, Recv: recv, Count: count}
	if kind == nccl.ReduceScatter {
		c.Count = count / int64(n)
	}
	in := make([][]float32, n)
	for i := range in {
		in[i] = make([]float32, c.SendCount())
		if kind == 0 {
			in[i] = make([]float32, count)
		}
		for j := range in[i] {
			in[i][j] = checkValue()
		}
		if err := gpu.WriteSlice(g.devs[i], r.data[i], in[i]); err != nil {
			return lessons.Result{}, fmt.Errorf("GPU %d: %w", i, err)
		}
	}
	var steps []gpu.DevOp
	out := recv
	switch w {
	case ringCopy, ringPeer:
		r.count = count
		steps, out = r.ops(w), r.data
	default:
		steps = []gpu.DevOp{{Device: -1, Op: c}}
	}
	if _, err := gpu.RunMulti(env.Dev, gpu.Multi{Devices: n, Steps: steps, Warmup: 0, Reps: 1}); err != nil {
		return lessons.Result{}, err
	}
	want := reference(kind, in, n)
	tol := numeric.TolFP32Sum(n)
	res := lessons.Result{Passed: true, Tolerance: tol}
	for i := range n {
		got, err := gpu.Download[float32](g.devs[i], out[i], len(want[i]))
		if err != nil {
			return res, fmt.Errorf("GPU %d: %w", i, err)
		}
		st, err := numeric.Compare(fmt.Sprintf("GPU %d's output", i), got, want[i], []int{len(want[i])}, tol)
		res.MaxRelErr = max(res.MaxRelErr, st.MaxRelErr)
		if err != nil {
			res.Passed, res.Outcome = false, err.Error()
			break
		}
	}
	return res, nil
}

// checkValue is a random input for a check: normally distributed, so
// that inputs have every bit of a float32's mantissa and exponents that
// differ, and their float32 sums round. (rand.Float32()·2 − 1 gives
// multiples of 2⁻²³ below 1, whose sums of two are exact in float32: a
// check of them could never see an error.)
func checkValue() float32 { return float32(rand.NormFloat64()) }

// reference is what each GPU should hold after kind (0: the all-reduce
// written by hand) over the inputs in: the float64 sum for an all-reduce,
// GPU i's block of it for a reduce-scatter, every input in GPU order for
// an all-gather.
func reference(kind nccl.Kind, in [][]float32, n int) [][]float64 {
	sum := make([]float64, len(in[0]))
	for _, v := range in {
		for j, x := range v {
			sum[j] += float64(x)
		}
	}
	want := make([][]float64, n)
	for i := range n {
		switch kind {
		case nccl.AllGather:
			for _, v := range in {
				for _, x := range v {
					want[i] = append(want[i], float64(x))
				}
			}
		case nccl.ReduceScatter:
			block := len(sum) / n
			want[i] = sum[i*block : (i+1)*block]
		default:
			want[i] = sum
		}
	}
	return want
}
