package precision

import (
	"fmt"
	"math"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
)

// summingLengths are the row lengths the step "Summing in FP16" runs, each
// with a row of every kind; summingShown the lengths its table shows the
// signed and tiny rows at (the positive rows it shows at every length).
var (
	summingLengths = []int{1 << 8, 1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20}
	summingShown   = map[int]bool{1 << 10: true, 1 << 20: true}
)

// summingKernels are the two kernels the step runs: the running sum in
// fp32, and in fp16.
var summingKernels = [2]struct {
	name string
	sum  partialSum
}{{"dot_h_v1", sumFP32}, {"dot_h_acc16", sumFP16}}

// summingRow is one row of the step's table: a kind of row at a length,
// and the error of each kernel's output, as the model computes it and as
// the GPU wrote it (NaN where it did not run).
type summingRow struct {
	kind, n int
	model   [2]float64
	gpu     [2]float64
	same    [2]bool // the GPU wrote, bit for bit, what the model computes
}

// summingModel computes the model's errors for every kind of row at every
// length, on the inputs the GPU gets.
func summingModel() []summingRow {
	var out []summingRow
	for _, n := range summingLengths {
		x, y := dotInput(dotKinds, n, dotSeed(dotKinds, n))
		want, abs := dotReference(x, y, dotKinds, n)
		var got [2][]float64
		for i, k := range summingKernels {
			got[i] = dotModel(x, y, dotKinds, n, k.sum)
		}
		for kind := range dotKinds {
			row := summingRow{kind: kind, n: n, gpu: [2]float64{math.NaN(), math.NaN()}}
			for i := range summingKernels {
				row.model[i] = math.Abs(got[i][kind]-want[kind]) / dotScale(abs[kind])
			}
			out = append(out, row)
		}
	}
	return out
}

// summing runs dot_h_v1 and dot_h_acc16 on rows of every kind and length,
// records each row's error, and shows them beside the model's.
func summing(dot *lessons.Problem) func(env *lessons.Env, l *lessons.Lesson, step string) error {
	return func(env *lessons.Env, l *lessons.Lesson, step string) error {
		rows := summingModel()
		src, err := kernels.Source("precision.cu")
		if err != nil {
			return err
		}
		var recorded []lessons.Result
		for i, k := range summingKernels {
			kern, err := env.Kernel(src, k.name)
			if err != nil {
				return err
			}
			for _, n := range summingLengths {
				rs, err := summingOnGPU(env, l, step, dot, i, kern, n, rows)
				recorded = append(recorded, rs...)
				if err != nil {
					return err
				}
			}
		}
		showSumming(env, rows, lessons.ResultSet{Results: recorded}.Source())
		return nil
	}
}

// summingOnGPU runs kernel i of summingKernels, loaded as kern, on a row of
// every kind of length n, and fills in and records those rows' GPU errors.
func summingOnGPU(env *lessons.Env, l *lessons.Lesson, step string, dot *lessons.Problem, i int, kern gpu.Kernel, n int, rows []summingRow) ([]lessons.Result, error) {
	k := summingKernels[i]
	c, err := env.RunOnce(dot, lessons.Size{dotKinds, n}, lessons.Impl{Name: k.name}, kern, dotBlock)
	if err != nil {
		return nil, err
	}
	defer c.Free()
	dc := c.(*dcase)
	got, err := dc.outputs()
	if err != nil {
		return nil, err
	}
	want, abs := dotReference(dc.x, dc.y, dc.rows, dc.n)
	model := dotModel(dc.x, dc.y, dc.rows, dc.n, k.sum)
	var out []lessons.Result
	for j := range rows {
		r := &rows[j]
		if r.n != n {
			continue
		}
		r.gpu[i] = math.Abs(got[r.kind]-want[r.kind]) / dotScale(abs[r.kind])
		r.same[i] = got[r.kind] == model[r.kind]
		out = append(out, env.Record(summingResult(l, step, k.name, *r, i)))
	}
	return out, nil
}

// summingResult is row's measurement by kernel i, for the results.
func summingResult(l *lessons.Lesson, step, kernel string, r summingRow, i int) lessons.Result {
	tol := dotTol(r.n)
	res := lessons.Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: kernel,
		Size: fmt.Sprintf("%s row of %d", dotKindNames[r.kind], r.n), Dims: lessons.Size{r.kind, r.n}, Block: dotBlock, DType: "float16",
		MaxRelErr: r.gpu[i], Tolerance: tol, Passed: r.gpu[i] <= tol}
	if r.same[i] {
		res.Detail = "the model's output, bit for bit"
	} else {
		res.Detail = fmt.Sprintf("the model's error: %.3g", r.model[i])
	}
	return res
}

// summingReplay shows the model's errors, computed here, beside the
// GPU's recorded with the lesson.
func summingReplay(env *lessons.Env, l *lessons.Lesson, step string) error {
	rows := summingModel()
	rs := l.Recorded().Filter(step, "check")
	for _, r := range rs {
		for j := range rows {
			row := &rows[j]
			if len(r.Dims) != 2 || r.Dims[0] != row.kind || r.Dims[1] != row.n {
				continue
			}
			for i, k := range summingKernels {
				if k.name == r.Variant {
					row.gpu[i], row.same[i] = r.MaxRelErr, r.Detail == "the model's output, bit for bit"
				}
			}
		}
	}
	source := "not recorded"
	if len(rs) > 0 {
		source = lessons.ResultSet{Results: rs}.Source()
	}
	fmt.Fprintf(env.Out, "No GPU here (%v): the model computed here; the GPU's errors %s.\n", env.NoGPU, source)
	showSumming(env, rows, source)
	return nil
}

// showSumming prints the rows the step shows: the positive ones at every
// length, the others at summingShown.
func showSumming(env *lessons.Env, rows []summingRow, source string) {
	t := &lessons.Table{Headers: []string{"row", "n", "tolerance", "fp32 sums: model", "GPU", "fp16 sums: model", "GPU"},
		Right: []bool{false, true, true, true, true, true, true}}
	same, ran := 0, 0
	for _, r := range rows {
		for i := range summingKernels {
			if !math.IsNaN(r.gpu[i]) {
				ran++
				if r.same[i] {
					same++
				}
			}
		}
		if r.kind != dotPositive && !summingShown[r.n] {
			continue
		}
		tol := dotTol(r.n)
		row := []string{dotKindNames[r.kind], fmt.Sprint(r.n), fmt.Sprintf("%.1e", tol)}
		for i := range summingKernels {
			row = append(row, sumCell(r.model[i], tol), sumCell(r.gpu[i], tol))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = []string{"Error: |out − exact sum| / Σ|x·y|; ✗ past the tolerance. Model: the kernels' arithmetic in Go, on the same inputs; GPU: " + source + "."}
	if ran > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("The GPU wrote what the model computes, bit for bit, in %d of %d rows (all kinds, all lengths).", same, ran))
	}
	env.PrintTable(t)
}

// sumCell writes an error, marked ✗ past tol; "—" for one not measured.
func sumCell(e, tol float64) string {
	switch {
	case math.IsNaN(e):
		return "—"
	case math.IsInf(e, 0):
		return "Inf ✗"
	case e > tol:
		return fmt.Sprintf("%.1e ✗", e)
	}
	return fmt.Sprintf("%.1e", e)
}
