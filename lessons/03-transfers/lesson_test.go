package transfers

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"cudarepl/lessons"
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

// TestShowEarly renders the race step from fixed results: what each read
// found, and a failure where y is wrong after the wait.
func TestShowEarly(t *testing.T) {
	unwritten := "check: y[67108862] = NaN, want 1.0001; 2 of 67108864 differ"
	rs := func(late string) []lessons.Result {
		return []lessons.Result{
			{Variant: enqueued, MedianMs: 0.4, Passed: true},
			{Variant: readEarly, MedianMs: 300, Detail: unwritten},
			{Variant: waited, MedianMs: 0.1, Passed: true},
			{Variant: readLate, MedianMs: 300, Passed: late == "", Detail: late},
		}
	}
	var out bytes.Buffer
	env := lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out, Width: 100})
	if err := showEarly(env, rs("")); err != nil {
		t.Fatalf("y complete after the wait: %v", err)
	}
	for _, want := range []string{unwritten, "passes the check", "300.000", "0.400"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := showEarly(env, rs(unwritten)); err == nil || !strings.Contains(err.Error(), "after waiting for the streams: "+unwritten) {
		t.Errorf("y wrong after the wait: %v, want it named", err)
	}
}
