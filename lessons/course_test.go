package lessons

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNameList(t *testing.T) {
	got := NameList([]string{"launches", "launches, each synchronised", "graph", "cuDNN SDPA"})
	if want := `launches, "launches, each synchronised", graph, "cuDNN SDPA"`; got != want {
		t.Errorf("NameList = %s, want %s", got, want)
	}
}

// TestMessage: what reaches a learner has no package prefix, wherever a
// wrapping left it; other prefixes (gpu: nvrtc: file:line) stay.
func TestMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New(`lessons: no lesson "x"`), `no lesson "x"`},
		{fmt.Errorf("vector-add, step %q: %w", "Benchmark", errors.New("lessons: size 2x2 has 2 numbers")), `vector-add, step "Benchmark": size 2x2 has 2 numbers`},
		{errors.New("lessons: fuse 1+2: the expression reads no input"), "fuse 1+2: the expression reads no input"},
		{errors.New(`gpu: nvrtc: mine.cu:3: expected a ";"`), `gpu: nvrtc: mine.cu:3: expected a ";"`},
		{errors.New("the lessons: all of them"), "the lessons: all of them"},
	}
	for _, tt := range tests {
		if got := Message(tt.err); got != tt.want {
			t.Errorf("Message(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestCheckSizes: a size with the wrong count of numbers is refused before
// anything runs, with the form the lesson's sweeps take and examples of it.
func TestCheckSizes(t *testing.T) {
	l := &Lesson{Slug: "demo", Steps: []Step{
		{Title: "one", Action: &Sweep{Sizes: []Size{{1, 4096}, {1000, 4096}}}},
	}}
	if err := l.CheckSizes([]Size{{10, 10}}); err != nil {
		t.Errorf("a size of 2 numbers: %v", err)
	}
	err := l.CheckSizes([]Size{{1 << 20}})
	want := "size 2^20 has 1 number, and demo measures sizes of 2 numbers, like 1x4096 or 1000x4096"
	if err == nil || err.Error() != want {
		t.Errorf("a size of 1 number: %v, want %q", err, want)
	}
	none := &Lesson{Slug: "prose", Steps: []Step{{Title: "only words"}}}
	if err := none.CheckSizes([]Size{{4}}); err == nil || !strings.Contains(err.Error(), "prose has no sweep over sizes") {
		t.Errorf("a lesson without sweeps over sizes: %v", err)
	}
}
