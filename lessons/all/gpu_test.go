//go:build gpu

package all

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// liveEnv opens the GPU or skips.
func liveEnv(t *testing.T) (*lessons.Env, *bytes.Buffer) {
	w, err := gpu.Open()
	if errors.Is(err, gpu.ErrNoGPU) {
		t.Skipf("no GPU here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var out bytes.Buffer
	return &lessons.Env{Dev: w, Out: &out, Workspace: t.TempDir(), PlotDir: t.TempDir()}, &out
}

func TestGPUEveryLessonChecks(t *testing.T) {
	env, out := liveEnv(t)
	for _, l := range lessons.All() {
		if err := l.CheckAll(env); err != nil {
			t.Errorf("%s: %v\n%s", l.Slug, err, out)
		}
	}
}

// TestGPUPlantedKernels judges the exercise's solution and two planted
// mistakes exactly as "check" does.
func TestGPUPlantedKernels(t *testing.T) {
	env, out := liveEnv(t)
	l, _ := lessons.Find("vector-add")
	tests := []struct {
		file    string
		wantErr string // "" for a pass
	}{
		{"solution.cu", ""},
		{"no_guard.cu", "past the end of c"},
		{"wrong_index.cu", "check: c["},
	}
	for _, tt := range tests {
		code, err := os.ReadFile("../02-vector-add/testdata/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = lessons.Judge(env, l, gpu.Source{Name: tt.file, Code: string(code)}, "vadd_exercise", "vadd_v1")
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v\n%s", tt.file, err, out)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: Judge = %v, want an error containing %q", tt.file, err, tt.wantErr)
		default:
			t.Logf("%s: %v", tt.file, err)
		}
	}
}
