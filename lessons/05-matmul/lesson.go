// Package matmul is lesson 5: the fp32 matrix-product ladder from a naive
// kernel to double-buffered 2D register blocking, each version against
// cuBLAS and beside Nsight Compute's counters, the last step taken one
// change at a time, then tensor cores.
package matmul

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
)

//go:embed lesson.md exercise.cu results testdata
var files embed.FS

// The kernels files of the lesson, and its library impls.
const (
	fp32File, tcFile   = "matmul.cu", "matmul_tc.cu"
	cublas, cublasFP16 = "cuBLAS", "cuBLAS fp16"
	ladderStep         = "The ladder" // its profile is recorded under this title too
)

// v7Steps are the kernels between v6 and v7, in file order: each changes
// one thing of the kernel it is timed against (before), and v7 changes one
// more. matmul_v7c_one_block is a control: the step from v7c to v7e taken
// in the other order.
var v7Steps = []string{"matmul_v7a_two_stages", "matmul_v7b_deep_tiles", "matmul_v7c_halves", "matmul_v7c_one_block", "matmul_v7d_unrolled", "matmul_v7e_one_block"}

// before names the kernel each step of "One change at a time" changes one
// thing of.
var before = map[string]string{
	"matmul_v7a_two_stages": "matmul_v6", "matmul_v7b_deep_tiles": "matmul_v7a_two_stages", "matmul_v7c_halves": "matmul_v7b_deep_tiles",
	"matmul_v7c_one_block": "matmul_v7c_halves", "matmul_v7d_unrolled": "matmul_v7c_halves", "matmul_v7e_one_block": "matmul_v7d_unrolled",
	"matmul_v7": "matmul_v7e_one_block",
}

// size4096 is where the ladder, its steps and its profile are measured;
// size8192 where the tensor-core versions are profiled, and the tile order
// timed.
var size4096, size8192 = lessons.Size{4096, 4096, 4096}, lessons.Size{8192, 8192, 8192}

func init() {
	p, tc, bf := problem(), tensorProblem(false), tensorProblem(true)
	sizes := []lessons.Size{{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, size4096, size8192}
	versions := append(ladderNames(fp32File), cublas)
	ladder := &lessons.Sweep{Title: "fp32 matmul ladder", XLabel: "matrix size (square, one side)",
		Impls: versions, Sizes: []lessons.Size{size4096}, Ladder: true}
	// The steps from v6 to v7 at one size, in interleaved rounds, each as a
	// share of cuBLAS's speed. Its step runs it as a measurement: replay
	// shows what was recorded for it, or says that nothing was.
	steps := &lessons.Sweep{Title: "fp32 matmul, from v6 to v7", XLabel: "matrix size (square, one side)",
		Impls: slices.Concat([]string{"matmul_v6"}, v7Steps, []string{"matmul_v7", cublas}), Sizes: []lessons.Size{size4096}, Ladder: true}
	// Every tensor-core version, v3 in grouped tile order too, so that
	// profile counts its DRAM bytes beside v3's at 8192³.
	tensorCores := &lessons.Sweep{Title: "fp16 tensor-core matmul", XLabel: "matrix size (square, one side)",
		Problem: tc, Sizes: sizes, Ladder: true}
	// v3 in its two tile orders and cuBLAS at 8192³, in interleaved rounds:
	// a measurement, as the steps from v6 to v7 are.
	tileOrder := &lessons.Sweep{Title: "fp16 tensor-core matmul, tile order", XLabel: "matrix size (square, one side)",
		Problem: tc, Impls: []string{"matmul_tc_v3", tcGrouped, cublasFP16}, Sizes: []lessons.Size{size8192}, Ladder: true}
	// The counters beside the ladders: what each rung moved (profile.json).
	warps := []string{lessons.ColTime, lessons.ColSMBusy, lessons.ColInstructions, lessons.ColOccupancy, lessons.ColLimiter, lessons.ColStalls}
	tensorPipe := []string{lessons.ColTime, lessons.ColTensor, lessons.ColInstructions, lessons.ColDRAM, lessons.ColPredicted, lessons.ColL2, lessons.ColConflicts}
	tileBytes := []string{lessons.ColTime, lessons.ColDRAM, lessons.ColPredicted, lessons.ColL2, lessons.ColDRAMBusy}
	lessons.Register(lessons.Def{
		Number: 5, Slug: "matmul", Files: files, Kernels: fp32File, Problem: p,
		Exercise: &lessons.Exercise{
			File: "matmul_exercise.cu", Kernel: "matmul_exercise", Like: "matmul_v3",
			Task: "Stage each step's tiles of A and B in shared memory, with what synchronisation the block needs, and write C. " +
				"It is checked at sizes that are not multiples of 32; run 'check --sanitize racecheck' on it too.",
		},
		Planted: []lessons.Planted{
			{File: "solution.cu"},
			{File: "solution.cu", Sanitize: "racecheck"}, // the barriers in their places: no hazard
			{File: "no_sync.cu", Want: "check: C["},
			{File: "no_sync.cu", Sanitize: "racecheck", Want: "hazard on shared memory"},
			{File: "no_second_sync.cu", Sanitize: "racecheck", Want: "hazard on shared memory"},
			{File: "early_return.cu", Want: "check: C["},
			{File: "transposed_tile.cu", Want: "check: C["},
			{File: "no_zero_fill.cu", Want: "check: C["},
			{File: "off_by_one.cu", Want: "check: C["},
		},
		Actions: map[string]lessons.Action{
			"Naive":                   &lessons.ShowKernel{Names: []string{"matmul_v1"}},
			"Coalescing":              &lessons.ShowKernel{Names: []string{"matmul_v2"}},
			"Shared memory":           &lessons.ShowKernel{Names: []string{"matmul_v3"}},
			"Register blocking":       &lessons.ShowKernel{Names: []string{"matmul_v4", "matmul_v5"}},
			"Vectorized loads":        &lessons.ShowKernel{Names: []string{"matmul_v6"}},
			"From v6 to v7":           &lessons.ShowKernel{Names: []string{"matmul_v7"}},
			"One change at a time":    &lessons.Run{Name: "measure", F: changes(steps, cublas, before)},
			"Registers and occupancy": &lessons.Run{Name: "measure", F: occupancy},
			"Check":                   &lessons.CheckStep{},
			"What each step saves": &lessons.Run{F: func(env *lessons.Env, l *lessons.Lesson, _ string) error {
				return traffic(env, l, ladder)
			}},
			ladderStep:                    ladder,
			"Where the bytes come from":   &lessons.ProfileStep{Of: ladder, Columns: lessons.MemoryColumns},
			"What the warps wait for":     &lessons.ProfileStep{Of: ladder, Columns: warps},
			"Sizes":                       &lessons.Sweep{Title: "fp32 matmul throughput", XLabel: "matrix size (square, one side)", Impls: versions, Sizes: sizes},
			"Tensor cores":                &lessons.ShowKernel{File: tcFile, Names: []string{"matmul_tc_v1"}},
			"Feeding them: mma.sync":      &lessons.ShowKernel{File: tcFile, Names: []string{"matmul_tc_v2"}},
			"Hopper: TMA and wgmma":       &lessons.ShowKernel{File: tcFile, Names: []string{"matmul_tc_v3", "tc_v3"}},
			"Tensor-core check":           &lessons.CheckStep{Problem: tc},
			"Tensor cores against cuBLAS": tensorCores,
			"Tensor-core counters": &lessons.ProfileStep{Of: tensorCores, Columns: tensorPipe,
				Impls: []string{"matmul_tc_v1", "matmul_tc_v2", "matmul_tc_v3", cublasFP16}},
			"Tile order":          &lessons.ShowKernel{File: tcFile, Names: []string{tcGrouped}},
			"Tile order, timed":   &lessons.Run{Name: "measure", F: changes(tileOrder, cublasFP16, map[string]string{tcGrouped: "matmul_tc_v3"})},
			"Tile-order counters": &lessons.ProfileStep{Of: tensorCores, Columns: tileBytes, Impls: tileOrder.Impls},
			"bf16 check":          &lessons.CheckStep{Problem: bf},
			"bf16 against cuBLAS": &lessons.Sweep{Title: "bf16 tensor-core matmul", XLabel: "matrix size (square, one side)",
				Problem: bf, Sizes: []lessons.Size{size4096}, Ladder: true},
			"Exercise": &lessons.ExerciseStep{},
		},
	})
}

// ladderNames lists the versions of a kernels file's ladder.
func ladderNames(file string) []string {
	var names []string
	for _, im := range lessons.LadderImpls(file) {
		names = append(names, im.Name)
	}
	return names
}

// problem is C = A·B in fp32 with the ladder of matmul.cu, the steps from
// v6 to v7 among them, and cuBLAS.
func problem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "fp32 matmul", DType: "float32", Unit: "TFLOP/s", Peak: gpu.PeakFP32, Baseline: cublas,
		CheckSizes: []lessons.Size{{1, 1, 1}, {17, 33, 65}, {33, 36, 44}, {1000, 1003, 517}, {1000, 1004, 516}},
		Setup:      setup,
		Memory:     lessons.MatmulMemory(4, 4),
		Work:       lessons.MatmulFLOPs,
		Bytes:      lessons.MatmulBytes(4, 4),
	}
	float4Rows := multiplesOf(4, "float4 rows")
	for _, im := range lessons.LadderImpls(fp32File) {
		im.Block = threads(im.Name)
		if im.Name == "matmul_v6" || im.Name == "matmul_v7" {
			im.Requires = float4Rows
		}
		p.Impls = append(p.Impls, im)
		if im.Name == "matmul_v6" {
			for _, name := range v7Steps {
				p.Impls = append(p.Impls, lessons.Impl{Name: name, Summary: summary(fp32File, name), Block: threads(name), Requires: float4Rows})
			}
		}
	}
	p.Impls = append(p.Impls, lessons.Impl{Name: cublas, Summary: "cublasSgemm, fp32", Library: true})
	return p
}

// summary is the comment above kernel name in file, in one line: what a
// kernel outside the ladder of // vN: lines does. It panics where the file
// has no such kernel, which any test of the lesson catches.
func summary(file, name string) string {
	src, err := kernels.Source(file)
	if err != nil {
		panic(err)
	}
	s, err := kernels.Summary(src, name)
	if err != nil {
		panic(err)
	}
	return s
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

// threads is each fp32 kernel's block size.
func threads(name string) int {
	switch {
	case name == "matmul_v4":
		return 512
	case name == "matmul_v5", name == "matmul_v6", strings.HasPrefix(name, "matmul_v7"):
		return 256
	}
	return 1024 // 32×32
}

// changes returns a step that runs sweep, a kernel and the kernels that
// change one thing of it, then shows each against the kernel it changes
// (changed[kernel]), round by round, and as a share of the library impl
// lib.
func changes(sweep *lessons.Sweep, lib string, changed map[string]string) func(env *lessons.Env, l *lessons.Lesson, step string) error {
	return func(env *lessons.Env, l *lessons.Lesson, step string) error {
		err := sweep.Do(env, l, step)
		rs := env.Results.Filter(step, "bench")
		if len(rs) == 0 {
			rs = l.Recorded().Filter(step, "bench")
		}
		by := map[string]lessons.Result{}
		for _, r := range rs {
			by[r.Variant] = r
		}
		t := &lessons.Table{
			Headers: []string{"kernel", "changes one thing of", "TFLOP/s", "× that kernel", "% of " + lib},
			Right:   []bool{false, false, true, true, true},
		}
		for _, name := range sweep.Impls {
			r, ok := by[name]
			prev, isStep := changed[name]
			if !ok || !isStep || r.Throughput <= 0 {
				continue
			}
			t.Rows = append(t.Rows, []string{name, prev, fmt.Sprintf("%.1f", r.Throughput),
				lessons.RatioOf(r, by[prev]).Text("%.2f"), lessons.RatioOf(r, by[lib]).Times(100).Text("%.1f")})
		}
		if len(t.Rows) > 0 {
			t.Notes = append(t.Notes, "each ratio is the median of the rounds' ratios, the lowest and highest in brackets: "+env.About(rs))
			env.PrintTable(t)
		}
		return err
	}
}
