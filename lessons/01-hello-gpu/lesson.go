// Package hellogpu is lesson 1: the device, a first kernel, the memory
// hierarchy, and the measured ceilings later lessons compare against.
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
			File: "where_am_i_exercise.cu", Kernel: "where_am_i_exercise", Like: "where_am_i",
			Task: "Compute the thread's index in the grid, keep spare threads out, and write its block and thread index.",
		},
		Planted: []lessons.Planted{{File: "solution.cu"}},
		Actions: map[string]lessons.Action{
			"The device":       &lessons.Run{F: deviceTable},
			"Who runs where":   &lessons.Run{F: whereAmI, Replay: whereAmIReplay, Kernel: "where_am_i", Block: 128, Size: lessons.Size{16 * 128}},
			"Memory hierarchy": &lessons.Run{F: hierarchy},
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
