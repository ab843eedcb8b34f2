// Package matmul is lesson 5: the fp32 matrix-product ladder from a naive
// kernel to double-buffered 2D register blocking, each version against
// cuBLAS and beside Nsight Compute's counters, then tensor cores.
package matmul

import (
	"embed"
	"fmt"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

func init() {
	p, tc, bf := problem(), tensorProblem(false), tensorProblem(true)
	sizes := []lessons.Size{{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}}
	ladder := &lessons.Sweep{Title: "fp32 matmul ladder", XLabel: "matrix size (square, one side)",
		Sizes: []lessons.Size{{4096, 4096, 4096}}, Ladder: true}
	tensorCores := &lessons.Sweep{Title: "fp16 tensor-core matmul", XLabel: "matrix size (square, one side)",
		Problem: tc, Sizes: sizes, Ladder: true}
	// The counters beside the ladders: what each rung moved (profile.json).
	warps := []string{lessons.ColTime, lessons.ColSMBusy, lessons.ColInstructions, lessons.ColOccupancy, lessons.ColLimiter, lessons.ColStalls}
	tensorPipe := []string{lessons.ColTime, lessons.ColTensor, lessons.ColInstructions, lessons.ColDRAM, lessons.ColPredicted, lessons.ColL2, lessons.ColConflicts}
	lessons.Register(lessons.Def{
		Number: 5, Slug: "matmul", Files: files, Kernels: "matmul.cu", Problem: p,
		Exercise: &lessons.Exercise{
			File: "matmul_exercise.cu", Kernel: "matmul_exercise", Like: "matmul_v3",
			Task: "Load the two tiles into shared memory, zero outside the matrices, and put the two barriers where they belong.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "racecheck"}, // the barriers in their places: no hazard
			{File: "no_sync.cu", Want: "check: C["},
			{File: "no_sync.cu", Sanitize: "racecheck", Want: "hazard on shared memory"},
			{File: "off_by_one.cu", Want: "check: C["},
		},
		Actions: map[string]lessons.Action{
			"Naive":             &lessons.ShowKernel{Names: []string{"matmul_v1"}},
			"Coalescing":        &lessons.ShowKernel{Names: []string{"matmul_v2"}},
			"Shared memory":     &lessons.ShowKernel{Names: []string{"matmul_v3"}},
			"Register blocking": &lessons.ShowKernel{Names: []string{"matmul_v4", "matmul_v5"}},
			"Vectorized loads":  &lessons.ShowKernel{Names: []string{"matmul_v6"}},
			"Check":             &lessons.CheckStep{},
			"What each step saves": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error {
				return traffic(env, l, ladder, tensorCores)
			}},
			"The ladder":                  ladder,
			"Where the bytes come from":   &lessons.ProfileStep{Of: ladder, Columns: lessons.MemoryColumns},
			"What the warps wait for":     &lessons.ProfileStep{Of: ladder, Columns: warps},
			"Sizes":                       &lessons.Sweep{Title: "fp32 matmul throughput", XLabel: "matrix size (square, one side)", Sizes: sizes},
			"Double buffering":            &lessons.ShowKernel{Names: []string{"matmul_v7"}},
			"Tensor cores":                &lessons.ShowKernel{File: "matmul_tc.cu", Names: []string{"matmul_tc_v1"}},
			"Feeding them: mma.sync":      &lessons.ShowKernel{File: "matmul_tc.cu", Names: []string{"matmul_tc_v2"}},
			"Hopper: TMA and wgmma":       &lessons.ShowKernel{File: "matmul_tc.cu", Names: []string{"matmul_tc_v3", "tc_v3"}},
			"Tensor-core check":           &lessons.CheckStep{Problem: tc},
			"Tensor cores against cuBLAS": tensorCores,
			"Tensor-core counters":        &lessons.ProfileStep{Of: tensorCores, Columns: tensorPipe},
			"bf16 check":                  &lessons.CheckStep{Problem: bf},
			"bf16 against cuBLAS": &lessons.Sweep{Title: "bf16 tensor-core matmul", XLabel: "matrix size (square, one side)",
				Problem: bf, Sizes: []lessons.Size{{4096, 4096, 4096}}, Ladder: true},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

// tiles gives each version's output tile (BM×BN) per block, for the traffic
// table; 1×1 for the untiled ones.
var tiles = map[string][2]int{
	"matmul_v1": {1, 1}, "matmul_v2": {1, 1}, "matmul_v3": {32, 32},
	"matmul_v4": {64, 64}, "matmul_v5": {128, 128}, "matmul_v6": {128, 128}, "matmul_v7": {128, 128},
}

// problem is C = A·B in fp32 with the ladder of matmul.cu and cuBLAS.
func problem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "fp32 matmul", DType: "float32", Unit: "TFLOP/s", Peak: gpu.PeakFP32, Baseline: "cuBLAS",
		CheckSizes: []lessons.Size{{1, 1, 1}, {17, 33, 65}, {33, 36, 44}, {1000, 1003, 517}, {1000, 1004, 516}},
		Setup:      setup,
		Memory:     lessons.MatmulMemory(4, 4),
		Work:       lessons.MatmulFLOPs,
		Bytes:      lessons.MatmulBytes(4, 4),
	}
	for _, im := range lessons.LadderImpls("matmul.cu") {
		im.Block = threads(im.Name)
		if im.Name == "matmul_v6" || im.Name == "matmul_v7" {
			im.Requires = multiplesOf(4, "float4 rows")
		}
		p.Impls = append(p.Impls, im)
	}
	p.Impls = append(p.Impls, lessons.Impl{Name: "cuBLAS", Summary: "cublasSgemm, fp32", Library: true})
	return p
}

// multiplesOf refuses sizes whose K or N is not a multiple of q, which a
// version needs for the reason why.
func multiplesOf(q int, why string) func(lessons.Size) error {
	return func(s lessons.Size) error {
		if s[1]%q != 0 || s[2]%q != 0 {
			return fmt.Errorf("needs K and N multiples of %d (%s), got N=%d, K=%d", q, why, s[1], s[2])
		}
		return nil
	}
}

// threads is each version's block size.
func threads(name string) int {
	switch name {
	case "matmul_v4":
		return 512
	case "matmul_v5", "matmul_v6", "matmul_v7":
		return 256
	}
	return 1024 // 32×32
}
