package all

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// TestEveryLessonIsComplete: prose for every step, at least one check and
// one figure, and the lessons numbered 1, 2, 3… in order.
func TestEveryLessonIsComplete(t *testing.T) {
	all := lessons.All()
	if len(all) < 2 {
		t.Fatalf("%d lessons registered", len(all))
	}
	for i, l := range all {
		if i > 0 && l.Number <= all[i-1].Number {
			t.Errorf("lesson %s is number %d, after %s, number %d", l.Slug, l.Number, all[i-1].Slug, all[i-1].Number)
		}
		if !strings.HasPrefix(l.Intro, "In this lesson you will") {
			t.Errorf("%s: the intro does not open with \"In this lesson you will\": %q", l.Slug, l.Intro)
		}
		kinds := map[string]int{}
		for _, s := range l.Steps {
			if strings.TrimSpace(s.Prose) == "" {
				t.Errorf("%s: step %q has no prose", l.Slug, s.Title)
			}
			if s.Action != nil {
				kinds[s.Action.Kind()]++
			}
		}
		if kinds["check"] == 0 {
			t.Errorf("%s has no check step", l.Slug)
		}
		if kinds["sweep"] == 0 {
			t.Errorf("%s has no sweep, so no figure", l.Slug)
		}
	}
}

// replayEnv is an env without a GPU, as CI has.
func replayEnv(t *testing.T) (*lessons.Env, *bytes.Buffer) {
	var out bytes.Buffer
	return &lessons.Env{Out: &out, NoGPU: errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"),
		PlotDir: t.TempDir(), Workspace: t.TempDir(), Width: 80}, &out
}

// TestReplayRunsEveryLesson runs each lesson end to end without a GPU and
// checks that every sweep drew its figure from recorded results.
func TestReplayRunsEveryLesson(t *testing.T) {
	for _, l := range lessons.All() {
		env, out := replayEnv(t)
		if err := l.RunAll(env); err != nil {
			t.Errorf("%s in replay: %v\n%s", l.Slug, err, out)
			continue
		}
		if len(l.Recorded().Results) == 0 {
			t.Errorf("%s has no recorded results to replay", l.Slug)
			continue
		}
		for _, s := range l.Steps {
			if s.Action == nil || s.Action.Kind() != "sweep" {
				continue
			}
			if len(l.Recorded().Filter(s.Title, "bench")) == 0 {
				t.Errorf("%s: nothing recorded for sweep %q", l.Slug, s.Title)
			}
		}
		pngs, _ := filepath.Glob(filepath.Join(env.PlotDir, "*.png"))
		if want := figures(l); len(pngs) != want {
			t.Errorf("%s: %d figures written, want %d (one per sweep, two with memory)", l.Slug, len(pngs), want)
		}
		if !strings.Contains(out.String(), "replayed from") {
			t.Errorf("%s: replay output never says it is replayed:\n%s", l.Slug, out)
		}
	}
}

// figures counts the figures a lesson's sweeps draw.
func figures(l *lessons.Lesson) int {
	n := 0
	for _, s := range l.Steps {
		if sw, ok := s.Action.(lessons.Sweep); ok {
			n++
			if sw.Memory {
				n++
			}
			if sw.Ladder {
				n++
			}
		}
	}
	return n
}

// TestPlantedCompileError: a learner's file that does not compile gets the
// compile error with its line, in replay as live.
func TestPlantedCompileError(t *testing.T) {
	if _, err := gpu.NVRTCVersion(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	l, err := lessons.Find("vector-add")
	if err != nil {
		t.Fatal(err)
	}
	code, _ := os.ReadFile("../02-vector-add/testdata/syntax_error.cu")
	env, _ := replayEnv(t)
	v, err := env.Judge(l, lessons.Submission{File: "syntax_error.cu", Code: string(code)})
	var ce *gpu.CompileError
	if err != nil || !v.Judged || !errors.As(v.Err, &ce) || ce.Line != 3 {
		t.Errorf("Judge(syntax error) = %+v, %v; want a failed verdict with a compile error at line 3", v, err)
	}
	code, _ = os.ReadFile("../02-vector-add/testdata/solution.cu")
	v, err = env.Judge(l, lessons.Submission{File: "solution.cu", Code: string(code)})
	if err != nil || v.Judged || !errors.Is(v.Err, lessons.ErrNeedsGPU) {
		t.Errorf("Judge(solution) without a GPU = %+v, %v; want not judged, ErrNeedsGPU", v, err)
	}
}
