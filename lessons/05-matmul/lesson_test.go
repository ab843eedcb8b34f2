package matmul

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
	"cudarepl/nvrtc"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestEveryVersionHasItsShape: each version of the ladder has a shape for
// the traffic table and a block size that fits its launch, and so has
// each step from v6 to v7.
func TestEveryVersionHasItsShape(t *testing.T) {
	for _, im := range lessons.LadderImpls(fp32File) {
		if _, ok := shapes[im.Name]; !ok {
			t.Errorf("%s has no shape in the traffic table", im.Name)
		}
	}
	l, _ := lessons.Find("matmul")
	for _, im := range l.Problem.Impls {
		if im.Library {
			continue
		}
		if b := threads(im.Name); b <= 0 || b > 1024 || b != im.Block {
			t.Errorf("%s: %d threads a block, launched with %d", im.Name, b, im.Block)
		}
	}
}

// TestStepsChangeOneThing: each kernel between v6 and v7 is the kernel it
// is timed against with one thing changed, so that its step measures that
// one thing. Each row undoes the change in the later kernel's code and
// expects the earlier kernel's, comments aside.
func TestStepsChangeOneThing(t *testing.T) {
	noPragmas := func(code string) string {
		var keep []string
		for _, line := range strings.Split(code, "\n") {
			if strings.TrimSpace(line) != "#pragma unroll" {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	oneBlock := func(code string) string {
		return strings.Replace(code, "__launch_bounds__(256, 1)", "__launch_bounds__(256)", 1)
	}
	tests := []struct {
		later, earlier string
		undo           func(string) string
	}{
		{"matmul_v7", "matmul_v7e_one_block", func(c string) string { return strings.ReplaceAll(c, "(size_t)", "") }},
		{"matmul_v7e_one_block", "matmul_v7d_unrolled", oneBlock},
		{"matmul_v7d_unrolled", "matmul_v7c_halves", noPragmas},
		{"matmul_v7c_one_block", "matmul_v7c_halves", oneBlock},
	}
	src, err := kernels.Source(fp32File)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		later, earlier := code(t, src, tt.later), code(t, src, tt.earlier)
		got := strings.Replace(tt.undo(later), tt.later+"(", tt.earlier+"(", 1)
		if got != earlier {
			t.Errorf("%s, its change undone, is not %s:\n%s\nwant\n%s", tt.later, tt.earlier, got, earlier)
		}
	}
	for name, prev := range before {
		if _, err := kernels.Function(src, name); err != nil {
			t.Errorf("before names %s, which %s lacks", name, fp32File)
		}
		if prev == "" {
			t.Errorf("%s is timed against nothing", name)
		}
	}
}

// TestGroupedChangesOneThing: matmul_tc_v3_grouped is matmul_tc_v3 with
// a group of 16 tile rows passed to the code they share, and nothing else,
// so that the step "Tile order" times the order alone.
func TestGroupedChangesOneThing(t *testing.T) {
	src, err := kernels.Source(tcFile)
	if err != nil {
		t.Fatal(err)
	}
	grouped, v3 := code(t, src, tcGrouped), code(t, src, "matmul_tc_v3")
	undone := strings.Replace(strings.Replace(grouped, ", 16);", ");", 1), tcGrouped+"(", "matmul_tc_v3(", 1)
	if undone == grouped || undone != v3 {
		t.Errorf("%s, its group undone, is not matmul_tc_v3:\n%s\nwant\n%s", tcGrouped, undone, v3)
	}
}

// code is kernel name's code in src, without its comment.
func code(t *testing.T, src nvrtc.Source, name string) string {
	t.Helper()
	fn, err := kernels.Function(src, name)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(fn, "\n") {
		if len(lines) == 0 && strings.HasPrefix(line, "//") {
			continue
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func TestMultiplesOf(t *testing.T) {
	need4 := multiplesOf(4, "float4 rows")
	if err := need4(lessons.Size{33, 36, 44}); err != nil {
		t.Errorf("33×36×44: %v", err)
	}
	if err := need4(lessons.Size{17, 33, 65}); err == nil || !strings.Contains(err.Error(), "got N=33, K=65") {
		t.Errorf("17×33×65: %v", err)
	}
}

// TestFits: blocks an SM holds, against what Nsight Compute reported for
// the ladder on the H100 (launch__occupancy_limit_registers in
// results/profile.json).
func TestFits(t *testing.T) {
	h100 := gpu.DeviceInfo{RegsPerSM: 65536, SharedPerSM: 233472, ReservedSharedPerBlock: 1024, MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32}
	tests := []struct {
		name   string
		regs   int
		shared int64
		block  int
		want   fit
	}{
		{"matmul_v1", 32, 0, 1024, fit{registers: 2, shared: 32, threads: 2}},
		{"matmul_v3", 32, 8192, 1024, fit{registers: 2, shared: 25, threads: 2}},
		{"matmul_v4", 44, 4096, 512, fit{registers: 2, shared: 32, threads: 4}},
		{"matmul_v5", 97, 8192, 256, fit{registers: 2, shared: 25, threads: 8}},
		{"matmul_v7", 147, 32768, 256, fit{registers: 1, shared: 6, threads: 8}},
		{"128 registers", 128, 32768, 256, fit{registers: 2, shared: 6, threads: 8}},
	}
	for _, tt := range tests {
		if got := fits(h100, tt.regs, tt.shared, tt.block); got != tt.want {
			t.Errorf("fits(%s: %d registers, %d B, %d threads) = %+v; want %+v", tt.name, tt.regs, tt.shared, tt.block, got, tt.want)
		}
	}
}

// TestTrafficTable: the bytes each output asks for fall as tiles grow, and
// match, to the byte, the sectors Nsight Compute counted on the H100.
func TestTrafficTable(t *testing.T) {
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	l, _ := lessons.Find("matmul")
	if err := l.RunStep(env, stepOf(t, l, "What each step saves")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`matmul_v1 +1×1 +135168 B +135168 B +— +— +0\.5 `,
		`matmul_v2 +1×1 +20480 B +20480 B +— +— +6\.3 `,
		`matmul_v3 +32×32 +1024 B +1024 B +8 B +2 +9\.0 `,
		`matmul_v4 +64×64 +512 B +512 B +4\.5 B +1\.12 +16\.7 `,
		`matmul_v6 +128×128 +256 B +256 B +1 B +0\.0625 +27\.9 `,
		`matmul_v7 +128×128 +256 B +256 B +1 B +0\.0625 +44\.4 `,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("traffic table lacks %q:\n%s", want, out.String())
		}
	}
}

func stepOf(t *testing.T, l *lessons.Lesson, title string) int {
	i, ok := l.StepNamed(title)
	if !ok {
		t.Fatalf("%s has no step %q", l.Slug, title)
	}
	return i
}
