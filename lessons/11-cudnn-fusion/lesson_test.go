package cudnnfusion

import (
	"testing"

	"cudarepl/lessons/conv"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestTraffic: unfused, y crosses memory five times (written by the
// convolution, read and written by the bias kernel and again by the ReLU);
// fused, once.
func TestTraffic(t *testing.T) {
	s := conv.Of(benchShape)
	y := int64(2 * s.N * s.K * s.H * s.W)
	if d := traffic(s, unfused) - traffic(s, fused); d != 4*y {
		t.Errorf("unfused moves %d bytes more than fused, want 4·y = %d", d, 4*y)
	}
	if d := traffic(s, unfusedOne) - traffic(s, fused); d != 2*y {
		t.Errorf("one bias+ReLU kernel moves %d bytes more than fused, want 2·y = %d", d, 2*y)
	}
	if d := traffic(s, fused) - traffic(s, convAlone); d != int64(2*s.K) {
		t.Errorf("fused moves %d bytes more than the conv alone, want the bias, %d", d, 2*s.K)
	}
}
