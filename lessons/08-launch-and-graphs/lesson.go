// Package launches is lesson 8: what a launch costs, with and without a
// synchronisation after it; chains of tiny kernels launched one by one
// against one CUDA graph, and updating a graph in place; allocating a
// step's temporaries each time, once, or from the stream-ordered pool.
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
// or b, or swaps them, gives something else.
const (
	oneByOne = "launches"
	synced   = "launches, each synchronised"
	graph    = "graph"
	chainA   = -1
	chainB   = 1
)

// chainElems is how many floats each link of the benchmarked chains
// computes: a few microseconds of work, so the launch is most of it.
const chainElems = 4096

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
			File: "chain_exercise.cu", Kernel: "chain_exercise", Like: graph, Bench: lessons.Size{1000, chainElems},
			Task: "Write the chain's link, y = a·x + b for the first n elements; cudarepl captures a chain of your launches into a graph and replays it.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "swapped.cu", Want: "check: y["},
			{File: "no_guard.cu", Want: "past the end of y"},
		},
		Actions: map[string]lessons.Action{
			"What a launch costs":     &lessons.ShowKernel{Names: []string{"empty"}},
			"Measuring it":            &lessons.Run{Name: "measure", F: launchCost},
			"A chain of tiny kernels": &lessons.ShowKernel{Names: []string{"chain_step"}},
			"Check":                   &lessons.CheckStep{},
			"Launches against a graph": &lessons.Sweep{Title: "A chain of tiny kernels (4096 floats each)", XLabel: "kernels in the chain (N)",
				Sizes: chains},
			"Updating a graph":             &lessons.Run{Name: "measure", F: update},
			"A graph outlives its buffers": &lessons.Run{F: freedUnderGraph, Replay: freedUnderGraphReplay},
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
// one graph. k is a learner's link when one is judged, else chain_step.
func (c *ccase) Ops(impl lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
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
