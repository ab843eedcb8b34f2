package hellogpu

import (
	"cmp"
	"fmt"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// whereProblem is who and where each of n threads is: each writes two
// facts about itself, and the SM it ran on. where_am_i writes its block
// and its index in the block; which_warp, the exercise's version, its warp
// in the block and its lane in the warp.
func whereProblem() *lessons.Problem {
	var impls []lessons.Impl
	for _, r := range records {
		impls = append(impls, lessons.Impl{Name: r.kernel, Summary: r.summary, Block: 128})
	}
	return &lessons.Problem{
		Name: "who and where", DType: "int32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1}, {100}, {2048}, {100003}},
		Impls:      impls,
		Setup:      setupWhere,
		Memory: func(s lessons.Size) lessons.Memory {
			n := int64(s[0] + whereGuard)
			return lessons.Memory{Device: 12 * n, Host: 2 * 12 * n} // three int32 outputs, read back through the worker
		},
		Work: func(s lessons.Size) float64 { return 12 * float64(s[0]) }, // three ints written per thread
	}
}

// record is what one of the problem's kernels writes for each thread:
// two facts, computed from the thread's block b and its index t in the
// block, then its SM.
type record struct {
	kernel, summary string
	names           [3]string // its outputs, as its parameters name them
	want            func(b, t int) [2]int32
}

// records are the problem's kernels, in the order the lesson meets them.
var records = []record{
	{kernel: "where_am_i", summary: "one thread per element, guarded: its block, its index in the block, its SM",
		names: [3]string{"block", "thread", "sm"}, want: func(b, t int) [2]int32 { return [2]int32{int32(b), int32(t)} }},
	{kernel: "which_warp", summary: "one thread per element, guarded: its warp in the block, its lane in the warp, its SM",
		names: [3]string{"warp", "lane", "sm"}, want: func(b, t int) [2]int32 { return [2]int32{int32(t / 32), int32(t % 32)} }},
}

// recordOf is what impl writes: its own kernel's record, or for a
// learner's kernel that of the version it is judged like.
func recordOf(impl lessons.Impl) (record, error) {
	name := cmp.Or(impl.Like, impl.Name)
	for _, r := range records {
		if r.kernel == name {
			return r, nil
		}
	}
	return record{}, fmt.Errorf("who and where has no version %q (it has: where_am_i, which_warp)", name)
}

// whereGuard is the room behind each output where a kernel that ignores n
// would write; it must still hold the poison after a run.
const whereGuard = 256

type whereCase struct {
	env   *lessons.Env
	n     int
	block int
	rec   record
	out   [3]gpu.DevicePtr
	sms   []int32 // each thread's SM, after Check
}

func setupWhere(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	c := &whereCase{env: env, n: s[0], rec: records[0]}
	for i := range c.out {
		p, err := env.Dev.Alloc(int64(4 * (c.n + whereGuard)))
		if err != nil {
			c.Free()
			return nil, err
		}
		c.out[i] = p
	}
	return c, nil
}

func (c *whereCase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	rec, err := recordOf(impl)
	if err != nil {
		return nil, err
	}
	c.rec, c.block = rec, block
	return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, block)), Block: gpu.Dim(block),
		Args: []gpu.Arg{gpu.Ptr(c.out[0]), gpu.Ptr(c.out[1]), gpu.Ptr(c.out[2]), gpu.Int32(int32(c.n))}}}, nil
}

// Poison fills every output, guard included, with -1: no thread writes it.
func (c *whereCase) Poison() error {
	for _, p := range c.out {
		if err := c.env.Dev.Run(gpu.Memset{Dst: p, Value: 0xffffffff, Count: int64(c.n + whereGuard)}); err != nil {
			return err
		}
	}
	return nil
}

// Check compares every thread's record with its position in the grid.
func (c *whereCase) Check() (numeric.CheckStats, error) {
	var got [3][]int32
	for i, p := range c.out {
		v, err := gpu.Download[int32](c.env.Dev, p, c.n+whereGuard)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		got[i] = v
	}
	st := numeric.CheckStats{N: 3 * c.n}
	sms, err := c.rec.check(got, c.n, c.block)
	if err != nil {
		return st, err
	}
	c.sms = sms
	return st, nil
}

func (c *whereCase) Free() {
	c.env.FreeAll(c.out[:]...)
}

// check checks what the kernel of r wrote for n threads in blocks of
// threads (got: its three outputs, each with its guard behind it) and
// returns each thread's SM. It looks for one kind of mistake at a time,
// first to last element, so that a kernel's first failure names the
// mistake rather than one of its consequences: writes past the end, then
// elements no thread wrote, then wrong values, then a block split over
// SMs. SM numbers need not run from 0 to the SM count: PTX does not
// promise that %smid is contiguous.
func (r record) check(got [3][]int32, n, threads int) ([]int32, error) {
	for o, name := range r.names {
		for j, v := range got[o][n:] {
			if v != -1 {
				return nil, fmt.Errorf("check: %s[%d] = %d was written past the end (n = %d): a thread with no element wrote", name, n+j, v, n)
			}
		}
	}
	for i := range n {
		for o, name := range r.names {
			if got[o][i] == -1 {
				return nil, fmt.Errorf("check: %s[%d] was never written (it still holds the poison, -1): no thread wrote element %d", name, i, i)
			}
		}
	}
	for i := range n {
		b, t := i/threads, i%threads
		want := r.want(b, t)
		for o := range want {
			if got[o][i] != want[o] {
				return nil, fmt.Errorf("check: %s[%d] = %d, want %d (thread %d of block %d)", r.names[o], i, got[o][i], want[o], t, b)
			}
		}
	}
	sm := got[2][:n]
	for i := range n {
		if b, t := i/threads, i%threads; t > 0 && sm[i] != sm[b*threads] {
			return nil, fmt.Errorf("check: thread %d of block %d ran on SM %d, thread 0 on SM %d", t, b, sm[i], sm[b*threads])
		}
	}
	return sm, nil
}
