package all

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/nvrtc"
)

// TestEveryLessonIsComplete: prose for every step, at least one check and
// one figure, and the lessons numbered 1, 2, 3… in order.
func TestEveryLessonIsComplete(t *testing.T) {
	all := lessons.All()
	if len(all) < 2 {
		t.Fatalf("%d lessons registered", len(all))
	}
	for i, l := range all {
		if i > 0 && l.Number <= all[i-1].Number {
			t.Errorf("lesson %s is number %d, after %s, number %d", l.Slug, l.Number, all[i-1].Slug, all[i-1].Number)
		}
		if !strings.HasPrefix(l.Intro, "In this lesson you will") {
			t.Errorf("%s: the intro does not open with \"In this lesson you will\": %q", l.Slug, l.Intro)
		}
		kinds := map[string]int{}
		for _, s := range l.Steps {
			if strings.TrimSpace(s.Prose) == "" {
				t.Errorf("%s: step %q has no prose", l.Slug, s.Title)
			}
			if s.Action != nil {
				kinds[s.Action.Kind()]++
			}
		}
		if kinds["check"] == 0 {
			t.Errorf("%s has no check step", l.Slug)
		}
		// A sweep draws its figure; a lesson whose measurements fit no
		// sweep (several GPUs at once) draws its own from measuring runs.
		if kinds["sweep"] == 0 && kinds["measure"] == 0 {
			t.Errorf("%s has no sweep and no measuring run, so no figure", l.Slug)
		}
	}
}

// TestEveryLessonTestsItself: each lesson folder has its own test, which
// runs the shared lesson tests (replay, planted kernels) through lessontest.
func TestEveryLessonTestsItself(t *testing.T) {
	dirs, _ := filepath.Glob("../[0-9][0-9]-*/lesson.go")
	for _, d := range dirs {
		dir := filepath.Dir(d)
		b, err := os.ReadFile(filepath.Join(dir, "lesson_test.go"))
		if err != nil {
			t.Errorf("%s has no lesson_test.go of its own", dir)
			continue
		}
		if !strings.Contains(string(b), "lessontest.Run(t)") {
			t.Errorf("%s/lesson_test.go does not call lessontest.Run", dir)
		}
	}
}

// TestREADMELinks: every file of the repository the README points at
// exists (it once sent readers to a curriculum that was not there).
func TestREADMELinks(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\b(?:docs|lessons|notebooks|scripts)/[\w./*-]+\.(?:md|json|ipynb|sh)\b`).FindAllString(string(b), -1) {
		if matches, _ := filepath.Glob(filepath.Join("../..", m)); len(matches) == 0 {
			t.Errorf("README names %s, which is not there", m)
		}
	}
}

// TestTrySizes: a kernel tried alone (a notebook's kernel cell, the REPL's
// edit kernel) is timed at a size it accepts and that answered within a
// tenth of a second a run where it was recorded: not a size its version
// refuses, or one that ran out of memory, or one that took seconds.
func TestTrySizes(t *testing.T) {
	for _, c := range []struct{ lesson, kernel, want string }{
		{"softmax", "softmax_v1", "1024×65536"},
		{"softmax", "softmax_v5", "2048×32768"},
		{"attention", "scale_h", "4×16×16384×64"},
		{"flash-attention", "flash_v1", "4×16×4096×64"},
		{"matmul", "matmul_v1", "4096×4096×4096"}, // its sweep's only size
		{"vector-add", "vadd_v1", "n=67108864"},
	} {
		l, err := lessons.Find(c.lesson)
		if err != nil {
			t.Fatal(err)
		}
		_, size, ok := l.Tryable(c.kernel)
		if !ok || size.String() != c.want {
			t.Errorf("%s %s is tried at %v (%v), want %s", c.lesson, c.kernel, size, ok, c.want)
		}
	}
}

// TestTryEditNamesTheLearnersLine: a learner's edit of a course kernel that
// does not compile is reported at the line of their own copy, under the
// name they know it by, not at a line of the course's file.
func TestTryEditNamesTheLearnersLine(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	l, err := lessons.Find("vector-add")
	if err != nil {
		t.Fatal(err)
	}
	code := "// mine\nextern \"C\" __global__ void vadd_v1(const float* a, const float* b, float* c, int n) {\n    int i = (blockIdx.x;\n    if (i < n) c[i] = a[i] + b[i];\n}\n"
	var out bytes.Buffer
	env := lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out, Workspace: t.TempDir()})
	env.TryEdit(l, lessons.Edit{Kernel: "vadd_v1", Code: code, File: "vadd_v1 in your cell"})
	if !strings.Contains(out.String(), "gpu: nvrtc: vadd_v1 in your cell:3: ") || strings.Contains(out.String(), "vector_add.cu") || strings.Contains(out.String(), "_yours.cu") {
		t.Errorf("a broken edit's error does not name the learner's line 3:\n%s", out.String())
	}
}
