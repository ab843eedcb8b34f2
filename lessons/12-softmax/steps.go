package softmax

import (
	"errors"
	"fmt"

	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// rowNames says what each kind of row holds, for the stability step.
var rowNames = [rowKinds]string{"N(0, 4²)", "100 … 180", "−200 … −120", "−30 … 30"}

// stability runs softmax_unsafe, the sum of exp(x) without the max
// subtracted, and checks each row of it on its own: one result a row, so
// that the table shows which kinds of row it fails.
func stability(env *lessons.Env, l *lessons.Lesson, step string) error {
	block, size := unsafeRows(env)
	src, _ := kernels.Source("softmax.cu")
	k, err := env.Kernel(src, "softmax_unsafe")
	if err != nil {
		return err
	}
	c, err := env.RunOnce(l.Problem, size, lessons.Impl{Name: "softmax_unsafe"}, k, block)
	if err != nil {
		return err
	}
	defer c.Free()
	sc := c.(*scase)
	y, _, err := sc.download()
	if err != nil {
		return err
	}
	want := reference(sc.x, sc.rows, sc.cols)
	var rs []lessons.Result
	for r := range sc.rows {
		lo, hi := r*sc.cols, (r+1)*sc.cols
		_, err := compare(y[lo:hi], want[lo:hi], 1, sc.cols, numeric.TolFP32Sum(sc.cols))
		res := lessons.Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: "softmax_unsafe", Size: rowLabel(r, sc.cols),
			Dims: lessons.Size{1, sc.cols}, DType: "float32", Block: block, Passed: err == nil}
		if ce := (*numeric.CheckError)(nil); errors.As(err, &ce) {
			ce.Index[0] = r // compare saw the row alone
		}
		if err != nil {
			res.Detail = err.Error()
		}
		rs = append(rs, env.Record(res))
	}
	showUnsafe(env, rs)
	return nil
}

// rowLabel names row r of cols columns and what it holds.
func rowLabel(r, cols int) string {
	return fmt.Sprintf("row %d: %d values, %s", r, cols, rowNames[r%rowKinds])
}

// unsafeRows says what rows softmax_unsafe runs on, and returns its
// launch.
func unsafeRows(env *lessons.Env) (block int, size lessons.Size) {
	block, size = env.Launch()
	fmt.Fprintf(env.Out, "softmax_unsafe on %d rows of %d: %s, %s, %s, %s, in turn.\n", size[0], size[1], rowNames[0], rowNames[1], rowNames[2], rowNames[3])
	return block, size
}

// stabilityReplay shows, without a GPU, the checks of softmax_unsafe
// recorded with the lesson.
func stabilityReplay(env *lessons.Env, l *lessons.Lesson, step string) error {
	unsafeRows(env)
	rs := l.Recorded().Filter(step, "check")
	if len(rs) == 0 {
		fmt.Fprintf(env.Out, "No GPU here (%v), and no run of softmax_unsafe was recorded.\n", env.NoGPU)
		return nil
	}
	env.ReplayNotice() // the table's note says whose run it is
	showUnsafe(env, rs)
	return nil
}

// showUnsafe prints what the check made of softmax_unsafe's rows, and the
// float32 limits that decide it.
func showUnsafe(env *lessons.Env, rs []lessons.Result) {
	t := &lessons.Table{Headers: []string{"rows", "check", "first wrong element"}, Right: []bool{false, false, false},
		Notes: []string{"softmax_unsafe · " + lessons.ResultSet{Results: rs}.Source(),
			"In float32, exp(x) is +Inf from x ≈ 88.7 up and 0 below x ≈ −104: a sum of +Inf gives Inf/Inf = NaN, a sum of 0 gives 0/0 = NaN."}}
	for _, r := range rs {
		verdict, first := "passed", "—"
		if !r.Passed {
			verdict, first = "failed", r.Detail
		}
		t.Rows = append(t.Rows, []string{r.Size, verdict, first})
	}
	env.PrintTable(t)
}
