package vectoradd

import (
	"errors"
	"fmt"
	"io"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// launchTable prints the grids that cover a few sizes with blocks of 256.
func launchTable(env *lessons.Env, l *lessons.Lesson, step string) error {
	writeLaunchTable(env.Out, 256, []int{1, 1000, 1023, 1 << 20, 1<<20 + 7})
	return nil
}

func writeLaunchTable(w io.Writer, block int, sizes []int) {
	fmt.Fprintf(w, "%12s  %8s  %8s  %14s  %13s\n", "n", "block", "grid", "threads", "spare threads")
	for _, n := range sizes {
		grid := gpu.Blocks(n, block)
		fmt.Fprintf(w, "%12d  %8d  %8d  %14d  %13d\n", n, block, grid, grid*block, grid*block-n)
	}
}

// unguarded says how vadd_unguarded is launched on n = 1000 (or the
// learner's launch), and returns the launch.
func unguarded(env *lessons.Env) (block, n, grid int) {
	block, size := env.Launch()
	n = size[0]
	grid = gpu.Blocks(n, block)
	fmt.Fprintf(env.Out, "vadd_unguarded, n = %d: %d blocks of %d = %d threads, %d of them spare.\n", n, grid, block, grid*block, grid*block-n)
	return block, n, grid
}

// boundsCheckReplay says what boundsCheck finds on a GPU.
func boundsCheckReplay(env *lessons.Env, _ *lessons.Lesson, _ string) error {
	unguarded(env)
	fmt.Fprintf(env.Out, "No GPU here: on a GPU, each spare thread writes one element past the end of c.\n")
	return nil
}

// boundsCheck runs vadd_unguarded on n = 1000 and shows what it overwrote.
func boundsCheck(env *lessons.Env, l *lessons.Lesson, step string) error {
	block, n, grid := unguarded(env)
	src, _ := kernels.Source("vector_add.cu")
	k, err := env.Kernel(src, "vadd_unguarded")
	if err != nil {
		return err
	}
	c, err := env.RunOnce(l.Problem, lessons.Size{n}, lessons.Impl{Name: "vadd_unguarded"}, k, block)
	if err != nil {
		return err
	}
	defer c.Free()
	_, err = c.Check()
	var pe *numeric.PastTheEndError
	switch {
	case errors.As(err, &pe):
		fmt.Fprintf(env.Out, "The check caught it: %v\n", err)
		fmt.Fprintf(env.Out, "Nothing faulted: those %d elements landed in memory that belonged to nothing yet.\n", pe.Count)
		return nil
	case err != nil:
		return err
	case grid*block == n:
		fmt.Fprintf(env.Out, "The check passed: with n a multiple of the block there are no spare threads, so nothing lands past the end. The guard is for every other n.\n")
		return nil
	}
	fmt.Fprintf(env.Out, "The check passed: nothing landed past the end of c, so this kernel keeps its spare threads from writing (a guard, or an equivalent).\n")
	return nil
}
