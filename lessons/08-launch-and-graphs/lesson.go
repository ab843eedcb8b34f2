// Package launches is lesson 8: what a launch costs, with and without a
// synchronisation after it; chains of tiny kernels launched one by one
// against one CUDA graph, on the GPU's events and on the host's clock, and
// updating a graph in place; allocating a step's temporaries each time,
// once, or from the stream-ordered pool; and, as the exercise, the whole
// chain written as one kernel, judged correct and faster than the graph.
package launches

import (
	"embed"
	"fmt"
	"math/rand/v2"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// kernelFile holds the lesson's kernels.
const kernelFile = "launches.cu"

// The chain's impls, and its step's coefficients: y = a·x + b with a = −1
// and b = 1 maps integers to integers exactly, and a kernel that ignores a
// or b, or swaps them, or applies one link too few or too many, gives
// something else.
const (
	oneByOne = "launches"
	synced   = "launches, each synchronised"
	graph    = "graph"
	fused    = "chain_fused" // the whole chain in one kernel: the exercise's model
	chainA   = -1
	chainB   = 1
)

// chainElems is how many floats each link of the benchmarked chains
// computes: a fraction of a microsecond of work (from a graph of 1000 on
// the H100, 1.02 µs a link against 0.80 µs for an empty kernel), so the
// launch is most of it.
const chainElems = 4096

// exerciseMin is how many times the rate of the graph of 1000 links the
// exercise's one kernel must reach at 1000 links: the chain in a tenth of
// the graph's time (1019 µs on the H100) or less. A kernel that launches
// once and takes each element through the chain in a register needs no
// more than one launch's time and 1000 dependent multiply-adds a thread;
// one thread walking all 4096 elements through the chain does 4096 times
// as many, one after another.
const exerciseMin = 10

// guardElems is the room behind each buffer, poisoned, where a kernel that
// ignores n would write.
const guardElems = 256

func init() {
	var chains []lessons.Size
	for _, n := range []int{1, 3, 10, 30, 100, 300, 1000} {
		chains = append(chains, lessons.Size{n, chainElems})
	}
	lessons.Register(lessons.Def{
		Number: 8, Slug: "launch-and-graphs", Files: files, Kernels: kernelFile, Problem: chainProblem(),
		Exercise: &lessons.Exercise{
			File: "chain_fused_exercise.cu", Kernel: "chain_fused_exercise", Like: fused, Bench: lessons.Size{1000, chainElems},
			Fast: &lessons.Speed{Against: graph, Min: exerciseMin,
				Why: "one launch is not enough: spread the elements over enough blocks and threads to fill the GPU"},
			Task: fmt.Sprintf("Write the whole chain as one kernel: each of the first n elements taken through all the links, "+
				"y = a·x + b applied links times, in one launch. It must match the chain worked out on the CPU at every check size, "+
				"and at 1000 links over %d floats reach %d times the rate of the graph of 1000 chain_step launches.", chainElems, exerciseMin),
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "one_link_short.cu", Want: "check: y["},
			{File: "every_link_reads_x.cu", Want: "check: y["},
			{File: "no_guard.cu", Want: "past the end of y"},
			{File: "one_thread.cu", Want: "correct but too slow"},
		},
		Actions: map[string]lessons.Action{
			"What a launch costs":     &lessons.ShowKernel{Names: []string{"empty"}},
			"Measuring it":            &lessons.Run{Name: "measure", F: launchCost},
			"A chain of tiny kernels": &lessons.ShowKernel{Names: []string{"chain_step"}},
			"Check":                   &lessons.CheckStep{},
			// The sweep times the three ways of launching the chain; the
			// one-kernel chain is the exercise's, timed beside a learner's.
			"Launches against a graph": &lessons.Sweep{Title: "A chain of tiny kernels (4096 floats each)", XLabel: "kernels in the chain (N)",
				Impls: []string{oneByOne, synced, graph}, Sizes: chains},
			"On the host's clock":          &lessons.Run{Name: "measure", F: hostClock},
			"Updating a graph":             &lessons.Run{Name: "measure", F: update},
			"A graph outlives its buffers": &lessons.Run{Name: "measure", F: freedUnderGraph},
			"A step's temporaries":         &lessons.ShowKernel{Names: []string{"scale_into", "accumulate"}},
			"Allocating them":              &lessons.Run{Name: "measure", F: allocation},
			"Exercise":                     &lessons.ExerciseStep{},
		},
	})
}

func chainProblem() *lessons.Problem {
	chain := []string{"chain_step"}
	return &lessons.Problem{
		Name: "chain of tiny kernels", DType: "float32", Unit: "kernels/ms",
		CheckSizes: []lessons.Size{{1, 1}, {2, 3}, {3, 1000}, {10, 4099}, {101, 257}},
		Impls: []lessons.Impl{
			{Name: oneByOne, Library: true, Kernels: chain, Summary: "N launches of chain_step, enqueued one after another"},
			{Name: synced, Library: true, Kernels: chain, Summary: "the same, waiting for each kernel to finish before the next launch"},
			{Name: graph, Library: true, Kernels: chain, Summary: "the N launches captured once into a CUDA graph, replayed with one cuGraphLaunch"},
			{Name: fused, Summary: "the whole chain in one launch: each thread takes its element through the N links in a register"},
		},
		Setup: setupChain,
		Memory: func(s lessons.Size) lessons.Memory {
			b := 4 * int64(3*s[1]+2*guardElems)
			return lessons.Memory{Device: b, Host: 3 * b}
		},
		Work:      func(s lessons.Size) float64 { return float64(s[0]) },
		SizeLabel: func(s lessons.Size) string { return fmt.Sprintf("N=%d, n=%d", s[0], s[1]) },
	}
}

// integers is n random integers below 1000 as floats, which y = a·x + b
// keeps exact.
func integers(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 8))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.IntN(1000))
	}
	return out
}

// ccase is a chain of N links over n floats: link k reads the input (k =
// 0) or the last link's output, and writes one of two buffers in turn.
type ccase struct {
	env    *lessons.Env
	links  int
	n      int
	x      []float32
	in     gpu.DevicePtr
	buf    [2]gpu.DevicePtr
	graphs []gpu.Graph
}

func setupChain(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	c := &ccase{env: env, links: s[0], n: s[1], x: integers(s[1], uint64(s[0]*s[1]))}
	var err error
	if c.in, err = gpu.Upload(env.Dev, c.x); err != nil {
		return nil, err
	}
	for i := range c.buf {
		if c.buf[i], err = env.Dev.Alloc(4 * int64(c.n+guardElems)); err != nil {
			c.Free()
			return nil, err
		}
	}
	return c, nil
}

// launches is the chain as N launches of k with coefficients a and b.
func (c *ccase) launches(k gpu.Kernel, block int, a, b float32) []gpu.Op {
	ops := make([]gpu.Op, c.links)
	src := c.in
	for i := range ops {
		dst := c.buf[i%2]
		ops[i] = gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, block)), Block: gpu.Dim(block),
			Args: []gpu.Arg{gpu.Ptr(src), gpu.Ptr(dst), gpu.Int32(int32(c.n)), gpu.Float32(a), gpu.Float32(b)}}
		src = dst
	}
	return ops
}

// Ops launches the chain one link at a time, with a Sync after each, or as
// one graph, each link k (a learner's link judged like one of these ways)
// or else chain_step; or as one kernel, k, that applies every link
// (chain_fused, or a learner's), writing where the last link would.
func (c *ccase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	if impl.Name == fused {
		return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(c.n, block)), Block: gpu.Dim(block),
			Args: []gpu.Arg{gpu.Ptr(c.in), gpu.Ptr(c.buf[(c.links-1)%2]), gpu.Int32(int32(c.n)), gpu.Int32(int32(c.links)),
				gpu.Float32(chainA), gpu.Float32(chainB)}}}, nil
	}
	if k.Name == "" {
		var err error
		if k, err = c.env.FileKernel(kernelFile, "chain_step"); err != nil {
			return nil, err
		}
	}
	ops := c.launches(k, block, chainA, chainB)
	switch impl.Name {
	case oneByOne:
		return ops, nil
	case synced:
		var out []gpu.Op
		for _, op := range ops {
			out = append(out, op, gpu.Sync{})
		}
		return out, nil
	case graph:
		g, err := c.env.Dev.Capture(ops...)
		if err != nil {
			return nil, err
		}
		c.graphs = append(c.graphs, g)
		return []gpu.Op{gpu.GraphOp{Graph: g}}, nil
	}
	return nil, fmt.Errorf("the chain has no variant %s", impl.Name)
}

func (c *ccase) Poison() error {
	var ops []gpu.Op
	for _, p := range c.buf {
		ops = append(ops, gpu.Memset{Dst: p, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.n + guardElems)})
	}
	return c.env.Dev.Run(ops...)
}

// Check compares the last link's output with the chain worked out on the
// CPU, then checks that no link wrote past n.
func (c *ccase) Check() (numeric.CheckStats, error) {
	return checkChain(c.env, c.buf, c.x, c.links, chainA, chainB)
}

// checkChain checks the output of a chain of links links with
// coefficients a and b over the input x, in bufs as ccase lays it out.
func checkChain(env *lessons.Env, bufs [2]gpu.DevicePtr, x []float32, links int, a, b float64) (numeric.CheckStats, error) {
	n := len(x)
	want := make([]float64, n)
	for i, v := range x {
		y := float64(v)
		for range links {
			y = a*y + b
		}
		want[i] = y
	}
	last := (links - 1) % 2
	got, err := gpu.Download[float32](env.Dev, bufs[last], n+guardElems)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	st, err := numeric.Compare("y", got[:n], want, []int{n}, numeric.TolFP32)
	if err != nil {
		return st, err
	}
	if err := numeric.PastTheEnd("y", got[n:], n); err != nil || links == 1 {
		return st, err
	}
	// The other buffer, which the links before the last wrote.
	guard, err := gpu.Download[float32](env.Dev, bufs[1-last]+gpu.DevicePtr(4*n), guardElems)
	if err != nil {
		return st, err
	}
	return st, numeric.PastTheEnd("y", guard, n)
}

func (c *ccase) Free() {
	for _, g := range c.graphs {
		c.env.Dev.FreeGraph(g)
	}
	c.env.FreeAll(c.in, c.buf[0], c.buf[1])
}
