package lessons

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"cudarepl/gpu/profiler"
)

// h100Kernels are the kernels of a profile ncu took on an H100 (package
// profiler's test log): vadd in the first set; strided, then vadd, in
// the second.
func h100Kernels(t *testing.T) [][]profiler.Kernel {
	t.Helper()
	b, err := os.ReadFile("../gpu/profiler/testdata/h100.log")
	if err != nil {
		t.Fatal(err)
	}
	sets, err := profiler.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

func profiled(variant string, n int, ks []profiler.Kernel) Result {
	return Result{Lesson: "fake", Step: "Ladder", Kind: "profile", Variant: variant, Size: Size{n}.String(), Dims: []int{n},
		Kernels: ks, Passed: true, GPU: "NVIDIA H100 80GB HBM3", Date: "2026-11-25", Mode: "replayed"}
}

func TestProfileTable(t *testing.T) {
	sets := h100Kernels(t)
	p := fakeProblem()
	rs := []Result{
		profiled("k1", 1<<22, sets[0]),
		profiled("k2", 1<<22, sets[1]),
		{Variant: "k3", Size: "n=4194304", Kind: "profile", Outcome: Refused, Detail: "needs sm_90a"},
	}
	var out bytes.Buffer
	ProfileTable(p, rs, MemoryColumns).Write(&out)
	ProfileTable(p, rs, ComputeColumns).Write(&out)
	got := out.String()
	for _, want := range []string{
		"variant  kernels  time (µs)  DRAM read (MB)", // a column of kernels, since k2 ran two
		"k1             1       18.3            33.6", // vadd: 2²² floats of a and of b read
		"50.3", // predicted: 12 bytes × 2²² elements
		"k3",
		"refused: needs sm_90a",
		"long scoreboard",
		"waiting for a global or local memory load",
		"sectors/load",
		"occupancy (%)",
		"           4.0", // vadd: a warp's 32 floats in 4 sectors
		"75 / 100  none",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("profile tables lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "k2 ran") {
		t.Errorf("the tables name the kernels: the caller does, once")
	}
}

func TestKernelNames(t *testing.T) {
	sets := h100Kernels(t)
	got := kernelNames([]Result{profiled("vadd", 1, sets[0]), profiled("vadd (yours)", 1, sets[0]), profiled("k2", 1, sets[1]), profiled("k2", 2, sets[1]), {Outcome: Refused}})
	if strings.Join(got, "|") != "k2 ran strided, vadd." {
		t.Errorf("kernel names %q", got)
	}
}

func TestClockNote(t *testing.T) {
	sets := h100Kernels(t)
	if got := clockNote([]Result{{Outcome: Refused}, profiled("k1", 1<<22, sets[0])}); !strings.Contains(got, "Clocks locked at base by Nsight Compute (SM 1615 MHz, memory 2615 MHz, as each kernel read them)") {
		t.Errorf("clock note %q", got)
	}
	if got := clockNote([]Result{profiled("k1", 1<<22, sets[0]), profiled("k2", 1<<22, sets[1])}); !strings.Contains(got, "(SM 1570–1615 MHz, memory 2612–2616 MHz") {
		t.Errorf("clock note of two profiles %q, want the range", got)
	}
	if got := clockNote(nil); got != "" {
		t.Errorf("clock note of nothing %q", got)
	}
}

func TestProfileTargets(t *testing.T) {
	p := fakeProblem()
	ladder := &Sweep{Sizes: []Size{{1 << 10}, {1 << 20}, {1 << 30}}, Ladder: true} // 12 GiB at 2³⁰: too large to profile
	sizes := &Sweep{Sizes: []Size{{1 << 12}}}                                      // the same problem: covered by the ladder
	strides := &Sweep{Sizes: []Size{{1 << 12}}, ProfileSizes: []Size{{1}, {2}}}    // asks for its own rows
	l := &Lesson{Slug: "fake", Problem: p, Steps: []Step{{Title: "Sizes", Action: sizes}, {Title: "Prose"},
		{Title: "Ladder", Action: ladder}, {Title: "Strides", Action: strides}}}
	for _, c := range []struct {
		desc string
		o    ProfileOptions
		want string // step: impls at sizes; …
		err  string
	}{
		{"every ladder, then what no ladder covers", ProfileOptions{}, "Ladder: k1,k2 at n=1048576; Strides: k1,k2 at n=1,n=2", ""},
		{"one variant", ProfileOptions{Variants: []string{"k2"}}, "Ladder: k2 at n=1048576; Strides: k2 at n=1,n=2", ""},
		{"one step", ProfileOptions{Step: 1}, "Sizes: k1,k2 at n=4096", ""},
		{"no such variant", ProfileOptions{Variants: []string{"k9"}}, "", `no variant k9 to profile (it has: k1, k2)`},
		{"a known and an unknown variant", ProfileOptions{Variants: []string{"k1", "k9"}}, "", `no variant k9 to profile`},
		{"a step that does not run the variant", ProfileOptions{Step: 1, Variants: []string{"k3"}}, "", "no variant k3"},
		{"a step of prose", ProfileOptions{Step: 2}, "", "step 2 of fake is not a sweep"},
	} {
		ts, err := l.profileTargets(c.o)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.desc, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.desc, err)
			continue
		}
		var parts []string
		for _, tg := range ts {
			var ims, szs []string
			for _, im := range tg.impls {
				ims = append(ims, im.Name)
			}
			for _, s := range tg.sizes {
				szs = append(szs, s.String())
			}
			parts = append(parts, tg.step+": "+strings.Join(ims, ",")+" at "+strings.Join(szs, ","))
		}
		if got := strings.Join(parts, "; "); got != c.want {
			t.Errorf("%s: targets %q, want %q", c.desc, got, c.want)
		}
	}
}

// TestProfileReplays: without a GPU, profile shows what was recorded with
// the lesson, and says so; a lesson with none says that in one line.
func TestProfileReplays(t *testing.T) {
	sets := h100Kernels(t)
	ladder := &Sweep{Sizes: []Size{{1 << 22}}, Ladder: true}
	show := &ProfileStep{Of: ladder, Columns: []string{ColTime, ColDRAM}}
	l := &Lesson{Slug: "fake", Problem: fakeProblem(), Steps: []Step{{Title: "Ladder", Action: ladder}, {Title: "Why", Action: show}}}
	var out bytes.Buffer
	env := Replay(errors.New("no driver"), View{Out: &out})
	if err := env.Profile(l, ProfileOptions{}); err == nil || !strings.Contains(err.Error(), `no profile of "Ladder" was recorded with fake`) {
		t.Errorf("with nothing recorded: %v", err)
	}
	if err := show.Do(env, l, "Why"); err != nil || !strings.Contains(out.String(), `No profile of "Ladder" was recorded`) {
		t.Errorf("the step with nothing recorded: %v\n%s", err, out.String())
	}
	l.recorded = ResultSet{Results: []Result{profiled("k1", 1<<22, sets[0]), profiled("k2", 1<<22, sets[1])}}
	l.recorded.Results[0].Step, l.recorded.Results[1].Step = "Ladder", "Ladder"
	out.Reset()
	if err := env.Profile(l, ProfileOptions{Variants: []string{"k2"}}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "showing the profiles replayed from NVIDIA H100 80GB HBM3, 2026-11-25") || !strings.Contains(got, "k2 ran strided, vadd.") || strings.Contains(got, "k1 ") {
		t.Errorf("replayed profile of k2:\n%s", got)
	}
	out.Reset()
	if err := show.Do(env, l, "Why"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "DRAM written (MB)") || strings.Contains(got, "L2 hit") {
		t.Errorf("the step shows the columns it names, only:\n%s", got)
	}
	if err := env.Profile(l, ProfileOptions{Mine: &Submission{File: "mine.cu"}}); err == nil || !strings.Contains(err.Error(), "needs a GPU") {
		t.Errorf("profiling a file without a GPU: %v", err)
	}
}

// TestProfileOneVariantKeepsItsSweep: naming a variant profiles the row the
// whole profile has, from the sweep that measures every impl, not from an
// earlier sweep of that variant alone (lesson 2's block sweep).
func TestProfileOneVariantKeepsItsSweep(t *testing.T) {
	p := fakeProblem()
	blocks := &Sweep{Impls: []string{"k1"}, Sizes: []Size{{1 << 20}}, Blocks: []int{64, 256}}
	bench := &Sweep{Sizes: []Size{{1 << 10}, {1 << 20}}}
	l := &Lesson{Slug: "fake", Problem: p, Steps: []Step{{Title: "Block size", Action: blocks}, {Title: "Benchmark", Action: bench}}}
	for _, variants := range [][]string{nil, {"k1"}} {
		ts, err := l.profileTargets(ProfileOptions{Variants: variants})
		if err != nil || len(ts) != 1 || ts[0].step != "Benchmark" {
			t.Errorf("variants %v: targets %+v, %v; want the Benchmark sweep only", variants, ts, err)
		}
	}
}
