package hellogpu

import (
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestCheckWhere: what where_am_i's threads wrote is checked on the CPU.
func TestCheckWhere(t *testing.T) {
	const threads = 4
	good := func() (block, thread, sm []int32) {
		for i := range 8 {
			block, thread, sm = append(block, int32(i/threads)), append(thread, int32(i%threads)), append(sm, int32(10+i/threads))
		}
		return
	}
	tests := []struct {
		desc    string
		mangle  func(block, thread, sm []int32)
		wantErr string
	}{
		{"every thread right", func(b, th, sm []int32) {}, ""},
		{"a wrong block", func(b, th, sm []int32) { b[5] = 0 }, "check: block[5] = 0, want 1"},
		{"a wrong thread", func(b, th, sm []int32) { th[2] = 7 }, "check: thread[2] = 7, want 2"},
		{"an SM numbered past the count is fine", func(b, th, sm []int32) { sm[0], sm[1], sm[2], sm[3] = 500, 500, 500, 500 }, ""},
		{"an SM never written", func(b, th, sm []int32) { sm[0] = -1 }, "check: sm[0] = -1, which no SM is"},
		{"a block split over SMs", func(b, th, sm []int32) { sm[6] = 3 }, "thread 2 of block 1 ran on SM 3, thread 0 on SM 11"},
	}
	for _, tt := range tests {
		b, th, sm := good()
		tt.mangle(b, th, sm)
		smOf, err := checkWhere(b, th, sm, threads)
		switch {
		case tt.wantErr == "" && (err != nil || len(smOf) != 2 || smOf[1] != 11):
			t.Errorf("%s: checkWhere = %v, %v; want SMs [10 11]", tt.desc, smOf, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: checkWhere = %v, want %q", tt.desc, err, tt.wantErr)
		}
	}
}

func TestBytesLabel(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{4, "4 B"}, {4096, "4 KiB"}, {1 << 20, "1 MiB"}, {1<<20 + 12, "1048588 B"}} {
		if got := bytesLabel(lessons.Size{tt.n}); got != tt.want {
			t.Errorf("bytesLabel(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
