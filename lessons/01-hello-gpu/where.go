package hellogpu

import (
	"fmt"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// whereProblem is where_am_i: each of n threads writes its block, its
// index in the block and its SM.
func whereProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "where am I", DType: "int32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{1}, {100}, {2048}, {100003}},
		Impls:      []lessons.Impl{{Name: "where_am_i", Summary: "one thread per element, guarded", Block: 128}},
		Setup:      setupWhere,
		Memory: func(s lessons.Size) lessons.Memory {
			n := int64(s[0] + whereGuard)
			return lessons.Memory{Device: 12 * n, Host: 2 * 12 * n} // three int32 outputs, read back through the worker
		},
		Work: func(s lessons.Size) float64 { return 12 * float64(s[0]) }, // three ints written per thread
	}
}

// whereGuard is the room behind each output where a kernel that ignores n
// would write; it must still hold the poison after a run.
const whereGuard = 256

type whereCase struct {
	env   *lessons.Env
	n     int
	block int
	out   [3]gpu.DevicePtr // block, thread, sm
	sms   []int32          // each thread's SM, after Check
}

func setupWhere(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	c := &whereCase{env: env, n: s[0]}
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
	c.block = block
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
	for i, name := range []string{"block", "thread", "sm"} {
		for j, v := range got[i][c.n:] {
			if v != -1 {
				return st, fmt.Errorf("check: %s[%d] = %d was written, past the end (n = %d): is the guard missing?", name, c.n+j, v, c.n)
			}
		}
	}
	if _, err := checkWhere(got[0][:c.n], got[1][:c.n], got[2][:c.n], c.block); err != nil {
		return st, err
	}
	c.sms = got[2][:c.n]
	return st, nil
}

func (c *whereCase) Free() {
	c.env.FreeAll(c.out[:]...)
}
