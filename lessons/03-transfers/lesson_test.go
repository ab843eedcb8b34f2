package transfers

import (
	"testing"

	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestBytesLabel(t *testing.T) {
	for b, want := range map[int64]string{4 << 10: "4 KiB", 1 << 30: "1 GiB", 256 << 20: "256 MiB", 4112: "4112 B", 4: "4 B"} {
		if got := bytesLabel(b); got != want {
			t.Errorf("bytesLabel(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestSpanKind(t *testing.T) {
	for op, want := range map[string]string{"copy host→device": "copy in", "copy device→host": "copy out", "work": "compute", "record event 1": ""} {
		if got := spanKind(op); got != want {
			t.Errorf("spanKind(%q) = %q, want %q", op, got, want)
		}
	}
}
