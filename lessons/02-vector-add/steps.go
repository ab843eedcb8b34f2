package vectoradd

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

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

// measureChanges shows what __restrict__ changes in the compiled code,
// then measures sw, each change beside the version it changes, and says
// what each bought.
func measureChanges(env *lessons.Env, l *lessons.Lesson, step string, sw *lessons.Sweep) error {
	if err := showLoads(env, l, []string{v3, restrict}); err != nil {
		return err
	}
	if err := sw.Do(env, l, step); err != nil {
		return err
	}
	rs := l.Recorded().Filter(step, "bench")
	if env.Live() {
		rs = env.Results.Filter(step, "bench")
	}
	if t := changesTable(rs); len(t.Rows) > 0 {
		env.PrintTable(t)
	}
	return nil
}

// A change is one rung of the ladder, or the control, against the version
// it changes.
type change struct {
	what        string
	impl, older string
}

var changes = []change{
	{"a grid-stride loop", v2, v1},
	{"float4 loads and stores", v3, v1},
	{"__restrict__", restrict, v3},
}

// changesTable is the throughput of each change over that of the version
// it changes, at each size rs measured both: the median of the rounds'
// ratios, each of two runs taken close in time, and their range.
func changesTable(rs []lessons.Result) *lessons.Table {
	t := &lessons.Table{Headers: []string{"change", "size", "÷ the version it changes"}, Right: []bool{false, false, true}}
	find := func(variant, size string) (lessons.Result, bool) {
		for _, r := range rs {
			if r.Variant == variant && r.Size == size && r.Outcome == "" && r.Throughput > 0 {
				return r, true
			}
		}
		return lessons.Result{}, false
	}
	var sizes []string
	for _, r := range rs {
		if !slices.Contains(sizes, r.Size) {
			sizes = append(sizes, r.Size)
		}
	}
	rounds := 0
	for _, size := range sizes {
		for _, ch := range changes {
			r, ok := find(ch.impl, size)
			base, okBase := find(ch.older, size)
			if !ok || !okBase {
				continue
			}
			q := lessons.RatioOf(r, base)
			rounds = max(rounds, q.Rounds)
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%s: %s ÷ %s", ch.what, ch.impl, ch.older), size, q.Text("%.3f")})
		}
	}
	if rounds > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("The median of %d rounds' ratios, each round measuring every version once, in turn; their range in brackets.", rounds))
	}
	return t
}

// showLoads prints the global loads in the PTX of each of names, compiled
// here: the instructions the compiler chose for them.
func showLoads(env *lessons.Env, l *lessons.Lesson, names []string) error {
	img, _, ok, err := env.CompileHere(l, "")
	if !ok {
		return err
	}
	fmt.Fprintf(env.Out, "The global loads in the PTX, compiled here by NVRTC %s for %s:\n", img.NVRTC, img.Arch)
	for _, name := range names {
		fmt.Fprintf(env.Out, "  %-18s %s\n", name, strings.Join(ptxLoads(img.PTX, name), ", "))
	}
	fmt.Fprintln(env.Out)
	return nil
}

// ptxLoads counts the global loads of kernel name in ptx by instruction,
// e.g. "2 × ld.global.nc.v4.f32", in the order they first appear.
func ptxLoads(ptx, name string) []string {
	_, body, found := strings.Cut(ptx, ".entry "+name+"(")
	if !found {
		return nil
	}
	body, _, _ = strings.Cut(body, ".entry ")
	var ops []string
	count := map[string]int{}
	for _, line := range strings.Split(body, "\n") {
		op, _, _ := strings.Cut(strings.TrimSpace(line), "\t")
		op, _, _ = strings.Cut(op, " ")
		if !strings.HasPrefix(op, "ld.global") {
			continue
		}
		if count[op] == 0 {
			ops = append(ops, op)
		}
		count[op]++
	}
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = fmt.Sprintf("%d × %s", count[op], op)
	}
	return out
}
