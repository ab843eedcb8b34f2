package matmul

import (
	"bytes"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestEveryVersionHasItsShape: each version of the ladder has a tile for
// the traffic table and a block size that fits its launch.
func TestEveryVersionHasItsShape(t *testing.T) {
	for _, im := range lessons.LadderImpls("matmul.cu") {
		if _, ok := tiles[im.Name]; !ok {
			t.Errorf("%s has no tile in the traffic table", im.Name)
		}
		if b := threads(im.Name); b <= 0 || b > 1024 {
			t.Errorf("%s: %d threads a block", im.Name, b)
		}
	}
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

// TestTrafficTable: the predicted bytes per output fall as tiles grow.
func TestTrafficTable(t *testing.T) {
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	l, _ := lessons.Find("matmul")
	if err := l.RunStep(env, stepOf(t, l, "What each step saves")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"matmul_v1                1×1               147456 B", "matmul_v3              32×32                 1024 B",
		"matmul_v7            128×128                  256 B", "matmul_tc_v3 (fp16)  128×256                   96 B"} {
		if !strings.Contains(out.String(), want) {
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
