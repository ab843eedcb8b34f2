// Package hellogpu is lesson 1: the device, a first kernel, the memory
// hierarchy with its sizes and a load's time from each level, and the
// measured ceilings later lessons compare against.
package hellogpu

import (
	"embed"

	"cudarepl/lessons"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

func init() {
	lessons.Register(lessons.Def{
		Number: 1, Slug: "hello-gpu", Files: files, Kernels: "hello.cu",
		Problem: whereProblem(),
		Exercise: &lessons.Exercise{
			File: "which_warp_exercise.cu", Kernel: "which_warp_exercise", Like: "which_warp",
			Task: "Give each thread its element i of the grid, keep the threads with no element from writing, " +
				"and write the warp each thread belongs to within its block and its lane in that warp.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "blockdim_for_blockidx.cu", Want: "warp[0] was never written"},
			{File: "index_in_block.cu", Want: "warp[128] was never written"},
			{File: "guard_after_writes.cu", Want: "warp[1] = 0 was written past the end"},
			{File: "warp_of_grid.cu", Want: "warp[128] = 4, want 0"},
			{File: "warp_lane_swapped.cu", Want: "warp[1] = 1, want 0"},
		},
		Actions: map[string]lessons.Action{
			"The device":       &lessons.Run{F: deviceTable},
			"Who runs where":   &lessons.Run{Name: "measure", F: whereAmI, Kernel: "where_am_i", Block: 128, Size: lessons.Size{16 * 128}},
			"Memory hierarchy": &lessons.Run{F: hierarchy},
			"Memory latency":   &lessons.Run{Name: "measure", F: latency},
			"Copy bandwidth": &lessons.Sweep{Title: "Device-to-device copy bandwidth", Problem: copyProblem(),
				XLabel: "bytes copied", Sizes: []lessons.Size{{1 << 20}, {1 << 22}, {1 << 24}, {1 << 26}, {1 << 28}, {1 << 29}}},
			"GEMM throughput": &lessons.Sweep{Title: "cuBLAS GEMM throughput", Problem: gemmProblem(),
				XLabel: "matrix size (square, one side)",
				Sizes:  []lessons.Size{{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}}},
			"Check":    &lessons.CheckStep{Problem: gemmProblem()},
			"Ceilings": &lessons.Run{F: ceilings},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}
