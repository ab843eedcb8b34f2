package precision

import (
	"bytes"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestFormats(t *testing.T) {
	for _, f := range formats {
		got, err := formatOf(f.name)
		if err != nil || got.name != f.name {
			t.Errorf("formatOf(%q) = %v, %v", f.name, got, err)
		}
	}
	if _, err := formatOf("fp4"); err == nil || !strings.Contains(err.Error(), `no variant "fp4"`) {
		t.Errorf("formatOf(fp4) = %v", err)
	}
}

// TestFP8NeedsMultiplesOf16 is the refusal, and the small check size that
// lets FP8 run at all where only small sizes run (under the sanitizer).
func TestFP8NeedsMultiplesOf16(t *testing.T) {
	p := problem()
	var fp8 lessons.Impl
	for _, im := range p.Impls {
		if im.Name == "fp8 e4m3" {
			fp8 = im
		}
	}
	if err := fp8.Requires(lessons.Size{1000, 1003, 517}); err == nil {
		t.Error("fp8 accepts 1000×1003×517")
	}
	small := 0
	for _, s := range p.CheckSizes {
		if fp8.Requires(s) == nil && p.Work(s) < 1e6 {
			small++
		}
	}
	if small == 0 {
		t.Error("no small check size runs fp8")
	}
}

func TestMemoryTable(t *testing.T) {
	var out bytes.Buffer
	if err := memoryTable(lessontest.ReplayEnv(t, &out), nil, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fp32       1/8/23", "64", "fp16", "65504", "fp8 e4m3", "448"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("memory table lacks %q:\n%s", want, out.String())
		}
	}
}
