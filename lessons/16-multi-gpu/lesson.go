// Package multigpu is lesson 16: several GPUs of one machine. Copies from
// one GPU's memory to another's, over the link and through the host; the
// collectives of NCCL (all-reduce, all-gather, reduce-scatter) from 4 KiB
// to 1 GiB, as nccl-tests counts their bandwidth, against the link's
// ceiling; a ring all-reduce written as kernels and peer copies beside
// NCCL's; and a data-parallel training step whose gradients are summed
// across the GPUs while the backward pass goes on.
package multigpu

import (
	"embed"
	"fmt"
	"math"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// ringStep is the course's step of the ring reduce-scatter, simulated on
// one GPU, which the exercise is judged like.
const ringStep = "ring_step"

func init() {
	lessons.Register(lessons.Def{
		Number: 16, Slug: "multi-gpu", Files: files, Kernels: "multigpu.cu",
		Problem: ringProblem(),
		Exercise: &lessons.Exercise{
			File: "ring_step_exercise.cu", Kernel: "ring_step_exercise", Like: ringStep,
			Task: "Write one step of the ring's reduce-scatter: keep the threads past the last element from writing, " +
				"and give each rank the rank it receives from and the chunk it adds at this step.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "chunk_off_by_one.cu", Want: "check: owned["},
			{File: "negative_modulo.cu", Want: "before its start"},
			{File: "wrong_neighbour.cu", Want: "check: owned["},
			{File: "copied_not_added.cu", Want: "check: owned["},
			{File: "no_guard.cu", Want: "past the end of bufs"},
		},
		Actions: map[string]lessons.Action{
			"The GPUs":               &lessons.Run{Name: "measure", F: gpusStep},
			"Peer copies":            &lessons.Run{Name: "measure", F: copiesStep},
			"Collectives":            &lessons.Run{Name: "measure", F: collectivesStep},
			"The ring, on one GPU":   &lessons.CheckStep{},
			"A ring by hand":         &lessons.Run{Name: "measure", F: ringStepBench},
			"Checked on every GPU":   &lessons.Run{Name: "measure", F: checkAll},
			"Data-parallel training": &lessons.Run{Name: "measure", F: trainStep},
			"Exercise":               &lessons.ExerciseStep{},
		},
	})
}

// ringProblem is the ring's reduce-scatter run on one GPU: ranks buffers
// of ranks × chunk floats each, end to end in one allocation, and
// ranks − 1 launches of a step kernel. A size is {ranks, chunk}.
func ringProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "ring reduce-scatter on one GPU", DType: "float32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{2, 1}, {2, 1000}, {3, 3}, {3, 4099}, {4, 1 << 16}, {5, 1000003}, {8, 12345}},
		Reference:  "the chunk each rank owns after the last step, against the float64 sum over the ranks",
		Impls:      []lessons.Impl{{Name: ringStep, Summary: "one step of the ring: each rank adds the chunk its neighbour passes on into its own"}},
		Setup:      setupRing,
		Memory: func(s lessons.Size) lessons.Memory {
			ranks, chunk := int64(s[0]), int64(s[1])
			count := ranks * chunk
			all := ranks * count
			guards := count + int64(backGuard(int(ranks), int(chunk)))
			return lessons.Memory{Device: 4 * (all + guards), Host: 4*(all+guards)*2 + 8*count}
		},
		// Each step reads two chunks and writes one for every rank.
		Work: func(s lessons.Size) float64 {
			ranks, chunk := float64(s[0]), float64(s[1])
			return 12 * chunk * ranks * (ranks - 1)
		},
		SizeLabel: func(s lessons.Size) string { return fmt.Sprintf("%d ranks × %d floats", s[0], s[0]*s[1]) },
	}
}

// ringCase is one simulated ring on the GPU: bufs holds the ranks' buffers
// end to end, between two poisoned guards: before, a rank's buffer, where
// a kernel that takes a chunk below 0 writes; behind, room for every rank
// past the last that the spare threads of a block (up to 1024) can reach.
type ringCase struct {
	env         *lessons.Env
	ranks, size int // ranks, and floats a rank (ranks × chunk)
	chunk       int
	mem         gpu.DevicePtr // guard (size floats), bufs, guard (back floats)
	back        int
	inputs      []float32
	want        []float64 // [rank][chunk]: the sum of chunk (rank + 1) mod ranks
}

func setupRing(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	ranks, chunk := s[0], s[1]
	if ranks < 2 || chunk < 1 {
		return nil, fmt.Errorf("a ring needs 2 ranks or more and a chunk of 1 float or more, not %d ranks of %d", ranks, chunk)
	}
	c := &ringCase{env: env, ranks: ranks, size: ranks * chunk, chunk: chunk, back: backGuard(ranks, chunk)}
	c.inputs = make([]float32, ranks*c.size)
	for i := range c.inputs {
		c.inputs[i] = checkValue()
	}
	c.want = ringReference(c.inputs, ranks, chunk)
	var err error
	if c.mem, err = env.Dev.Alloc(4 * int64(c.size+len(c.inputs)+c.back)); err != nil {
		return nil, err
	}
	return c, nil
}

// ringReference is, for each rank r, the chunk (r + 1) mod ranks summed
// over every rank's buffer in float64: what rank r holds after the ring's
// reduce-scatter.
func ringReference(in []float32, ranks, chunk int) []float64 {
	size := ranks * chunk
	want := make([]float64, ranks*chunk)
	for r := range ranks {
		c := (r + 1) % ranks
		for i := range chunk {
			var s float64
			for q := range ranks {
				s += float64(in[q*size+c*chunk+i])
			}
			want[r*chunk+i] = s
		}
	}
	return want
}

// Ops launches the step kernel once for each of the ranks − 1 steps, a
// thread for each element of a chunk and rank.
func (c *ringCase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	bufs := c.mem + gpu.DevicePtr(4*c.size)
	var ops []gpu.Op
	for step := range c.ranks - 1 {
		ops = append(ops, gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.ranks*c.chunk, block)), Block: gpu.Dim(block),
			Args: []gpu.Arg{gpu.Ptr(bufs), gpu.Int32(int32(c.ranks)), gpu.Int32(int32(c.size)), gpu.Int32(int32(step))}})
	}
	return ops, nil
}

// Poison puts the inputs back (the steps add in place) and fills the
// guards on either side with NaN.
func (c *ringCase) Poison() error {
	d := c.env.Dev
	if err := d.Run(gpu.Memset{Dst: c.mem, Value: numeric.Poison32, Count: int64(c.size + len(c.inputs) + c.back)}); err != nil {
		return err
	}
	return gpu.WriteSlice(d, c.mem+gpu.DevicePtr(4*c.size), c.inputs)
}

// Check compares the chunk each rank owns with the sum over the ranks,
// then checks that nothing was written into the guards.
func (c *ringCase) Check() (numeric.CheckStats, error) {
	all, err := gpu.Download[float32](c.env.Dev, c.mem, c.size+len(c.inputs)+c.back)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	front, bufs, back := all[:c.size], all[c.size:c.size+len(c.inputs)], all[c.size+len(c.inputs):]
	if err := beforeStart("bufs", front); err != nil {
		return numeric.CheckStats{}, err
	}
	owned := make([]float32, c.ranks*c.chunk)
	for r := range c.ranks {
		own := (r + 1) % c.ranks
		copy(owned[r*c.chunk:(r+1)*c.chunk], bufs[r*c.size+own*c.chunk:][:c.chunk])
	}
	st, err := numeric.Compare("owned", owned, c.want, []int{c.ranks, c.chunk}, numeric.TolFP32Sum(c.ranks))
	if err != nil {
		return st, err
	}
	return st, numeric.PastTheEnd("bufs", back, len(c.inputs))
}

func (c *ringCase) Free() { c.env.FreeAll(c.mem) }

// backGuard is the floats behind the ranks' buffers that a step with no
// guard can write: its spare threads, up to 1023 of a block of 1024, take
// ranks past the last, each a buffer of ranks × chunk floats further on.
func backGuard(ranks, chunk int) int {
	past := (1023 + chunk - 1) / chunk // ranks past the last a spare thread can be in
	return (past + 1) * ranks * chunk
}

// beforeStart reports writes into guard, the poisoned words just before
// the output called name, where a kernel that computes a negative index
// writes.
func beforeStart(name string, guard []float32) error {
	for i, v := range guard {
		if math.Float32bits(v) != numeric.Poison32 {
			return fmt.Errorf("check: %s[%d] = %g was written before its start: is an index negative?", name, i-len(guard), v)
		}
	}
	return nil
}
