package fusion

import (
	"math"
	"testing"

	"cudarepl/lessons/lessontest"
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
