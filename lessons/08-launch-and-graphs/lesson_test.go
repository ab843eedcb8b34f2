package launches

import (
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestRepays: the replays that pay back a graph's build are the build over
// what one replay saves the host, rounded up, and none where it saves
// nothing or a figure is missing.
func TestRepays(t *testing.T) {
	row := func(links int, launched, replayed, build float64) map[string]lessons.Result {
		dims := []int{links, chainElems}
		return map[string]lessons.Result{
			launchedEnd: {Variant: launchedEnd, Dims: dims, MedianMs: launched},
			graphEnd:    {Variant: graphEnd, Dims: dims, MedianMs: replayed},
			graphBuild:  {Variant: graphBuild, Dims: dims, MedianMs: build},
		}
	}
	missing := row(100, 0.004, 0.001, 0.6)
	delete(missing, graphBuild)
	tests := []struct {
		desc   string
		row    map[string]lessons.Result
		want   int
		wantOK bool
	}{
		{"100 kernels, 0.3 ms saved a replay, 0.6 ms to build", row(100, 0.004, 0.001, 0.6), 2, true},
		{"rounded up", row(100, 0.004, 0.001, 0.61), 3, true},
		{"one kernel, the graph no faster", row(1, 0.004, 0.004, 0.05), 0, false},
		{"the graph slower", row(1, 0.004, 0.005, 0.05), 0, false},
		{"no build recorded", missing, 0, false},
	}
	for _, tt := range tests {
		got, ok := repays(tt.row)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: repays = %d, %v; want %d, %v", tt.desc, got, ok, tt.want, tt.wantOK)
		}
	}
}
