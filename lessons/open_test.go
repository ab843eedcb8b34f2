package lessons

import "testing"

func TestLessonRange(t *testing.T) {
	tests := []struct {
		ns   []int
		want string
	}{
		{[]int{3}, "lesson 3"},
		{[]int{10, 2, 11}, "lessons 2, 10 and 11"},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14}, "lessons 1–9, 11–14"},
		{[]int{1, 2, 3, 5}, "lessons 1–3 and 5"},
		{[]int{1, 2}, "lessons 1 and 2"},
	}
	for _, tt := range tests {
		if got := lessonRange(tt.ns); got != tt.want {
			t.Errorf("lessonRange(%v) = %q, want %q", tt.ns, got, tt.want)
		}
	}
	if got := dateRange("2026-11-22", "2026-11-25"); got != "2026-11-22 to 2026-11-25" {
		t.Errorf("dateRange = %q", got)
	}
}
