package softmax

import (
	"fmt"

	"cudarepl/kernels"
	"cudarepl/lessons"
)

// stability runs softmax_unsafe, the sum of exp(x) without the max
// subtracted, on rows of every kind, and shows what the check makes of it.
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
	_, err = c.Check()
	r := lessons.Result{Lesson: l.Slug, Step: step, Kind: "check", Variant: "softmax_unsafe", Size: l.Problem.SizeLabel(size),
		Dims: size, DType: "float32", Block: block, Passed: err == nil}
	if err != nil {
		r.Detail = err.Error()
	}
	env.Record(r)
	if err != nil {
		fmt.Fprintf(env.Out, "The check caught it: %v\n", err)
		if size[0] > rowLarge {
			fmt.Fprintf(env.Out, "Row %d holds values from 100 to 180: exp(89) is already past float32's largest number, 3.4·10³⁸, so the sum is +Inf and every element Inf/Inf or 0/Inf.\n", rowLarge)
		}
		return nil
	}
	fmt.Fprintf(env.Out, "The check passed: every row came out finite and right, so this kernel keeps its exponents in range (the max subtracted, or an equivalent).\n")
	return nil
}

// unsafeRows says what rows softmax_unsafe runs on, and returns its
// launch.
func unsafeRows(env *lessons.Env) (block int, size lessons.Size) {
	block, size = env.Launch()
	fmt.Fprintf(env.Out, "softmax_unsafe on %d rows of %d: random, 100 … 180, −200 … −120, −30 … 30, in turn.\n", size[0], size[1])
	return block, size
}

// stabilityReplay says what stability shows on a GPU.
func stabilityReplay(env *lessons.Env, _ *lessons.Lesson, _ string) error {
	unsafeRows(env)
	fmt.Fprintf(env.Out, "No GPU here: on a GPU, exp(100) and above overflow to +Inf, and the rows around 100 come out NaN.\n")
	return nil
}
