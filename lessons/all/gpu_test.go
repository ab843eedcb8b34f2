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

// TestGPUPlantedKernels judges each exercise's solution and planted
// mistakes exactly as "check" does.
func TestGPUPlantedKernels(t *testing.T) {
	env, out := liveEnv(t)
	tests := []struct {
		lesson, dir, file string
		wantErr           string // "" for a pass
	}{
		{"vector-add", "02-vector-add", "solution.cu", ""},
		{"vector-add", "02-vector-add", "no_guard.cu", "past the end of c"},
		{"vector-add", "02-vector-add", "wrong_index.cu", "check: c["},
		{"hello-gpu", "01-hello-gpu", "solution.cu", ""},
		{"matmul", "05-matmul", "solution.cu", ""},
		{"matmul", "05-matmul", "no_sync.cu", "check: C["},
		{"matmul", "05-matmul", "off_by_one.cu", "check: C["},
	}
	for _, tt := range tests {
		l, err := lessons.Find(tt.lesson)
		if err != nil {
			t.Fatal(err)
		}
		code, err := os.ReadFile("../" + tt.dir + "/testdata/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		v, err := env.Judge(l, lessons.Submission{File: tt.file, Code: string(code)})
		if err == nil && !v.Passed() {
			err = v.Err
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s/%s: %v\n%s", tt.lesson, tt.file, err, out)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s/%s: Judge = %v, want an error containing %q", tt.lesson, tt.file, err, tt.wantErr)
		default:
			t.Logf("%s/%s: %v", tt.lesson, tt.file, err)
		}
	}
}
