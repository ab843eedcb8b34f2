package fusion

import (
	"math"
	"strings"
	"testing"

	"cudarepl/kernels"
	"cudarepl/lessons/lessontest"
	"cudarepl/nvrtc"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestReference(t *testing.T) {
	for _, tc := range []struct{ a, b, c, want float64 }{
		{0, 0, 0, 0.5},
		{1, 2, 3, 1 / (1 + math.Exp(-7))},
		{-20, 0, 5, 1 / (1 + math.Exp(20))},
	} {
		if got := reference(tc.a, tc.b, tc.c); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("reference(%v, %v, %v) = %v, want %v", tc.a, tc.b, tc.c, got, tc.want)
		}
	}
}

// TestStarterHoldsTheChain: the unfused kernels handed out with the
// exercise are the lesson's own, the ones its sweep times as three
// kernels, comments aside.
func TestStarterHoldsTheChain(t *testing.T) {
	b, err := files.ReadFile("exercise.cu")
	if err != nil {
		t.Fatal(err)
	}
	starter := nvrtc.Source{Name: "exercise.cu", Code: string(b)}
	course, err := kernels.Source("fusion.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mul_f", "add_f", "sigmoid_f"} {
		got, err := kernels.Function(starter, name)
		if err != nil {
			t.Errorf("the starter: %v", err)
			continue
		}
		want, err := kernels.Function(course, name)
		if err != nil {
			t.Fatal(err)
		}
		if code(got) != code(want) {
			t.Errorf("the starter's %s is\n%s\nwant fusion.cu's\n%s", name, code(got), code(want))
		}
	}
}

// code is a function's source without the comment lines above it.
func code(fn string) string {
	lines := strings.Split(strings.TrimSpace(fn), "\n")
	for len(lines) > 0 && strings.HasPrefix(strings.TrimSpace(lines[0]), "//") {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

// TestCheckSizesCatchAMissingTail: a float4 kernel that leaves out the
// last n % 4 elements fails only at a size that is not a multiple of 4.
func TestCheckSizesCatchAMissingTail(t *testing.T) {
	for _, s := range problem().CheckSizes {
		if s[0]%4 != 0 {
			return
		}
	}
	t.Errorf("every check size of %s is a multiple of 4", problem().Name)
}
