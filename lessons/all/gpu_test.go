//go:build gpu

package all

import (
	"bytes"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

// liveEnv opens the GPU or skips.
func liveEnv(t *testing.T) (*lessons.Env, *bytes.Buffer) {
	var out bytes.Buffer
	env, err := lessons.Open(lessons.Options{View: lessons.View{Out: &out, Workspace: t.TempDir(), PlotDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if !env.Live() {
		t.Skipf("no GPU here: %v", env.NoGPU)
	}
	t.Cleanup(func() { env.Close() })
	return env, &out
}

func TestGPUEveryLessonChecks(t *testing.T) {
	env, out := liveEnv(t)
	for _, l := range lessons.All() {
		if err := l.CheckAll(env); err != nil {
			t.Errorf("%s: %v\n%s", l.Slug, err, out)
		}
	}
}

// TestGPUPlantedKernels judges every lesson's planted kernels exactly as
// "check --kernel" does, under compute-sanitizer where they say so: each
// solution passes, each mistake is rejected for the reason planted. Each
// lesson is a subtest, so -test.run TestGPUPlantedKernels/flash-attention
// judges one lesson's.
func TestGPUPlantedKernels(t *testing.T) {
	env, out := liveEnv(t)
	for _, l := range lessons.All() {
		if len(l.Planted) == 0 {
			continue
		}
		t.Run(l.Slug, func(t *testing.T) {
			for _, pk := range l.Planted {
				out.Reset()
				name := pk.File
				if pk.Sanitize != "" {
					name += " under " + pk.Sanitize
				}
				if err := lessontest.Judge(env, l, pk); err != nil {
					t.Errorf("%s: %v\n%s", name, err, out)
					continue
				}
				t.Logf("%s: as planted: %s", name, lastLine(out.String()))
			}
		})
	}
}

// TestGPUMemcheckClean: every lesson's checks, run under compute-sanitizer
// memcheck, find no error.
func TestGPUMemcheckClean(t *testing.T) {
	env, out := liveEnv(t)
	err := env.Sanitize("memcheck", func(env *lessons.Env) error {
		for _, l := range lessons.All() {
			if err := l.CheckAll(env); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("memcheck: %v\n%s", err, out)
	}
}

// TestGPURacecheckClean: every kernel of the course (not the libraries'),
// checked under compute-sanitizer racecheck, has no shared-memory hazard.
func TestGPURacecheckClean(t *testing.T) {
	env, out := liveEnv(t)
	err := env.Sanitize("racecheck", func(env *lessons.Env) error {
		for _, l := range lessons.All() {
			for _, p := range l.Problems() {
				var kernels []string
				for _, im := range p.Impls {
					if !im.Library {
						kernels = append(kernels, im.Name)
					}
				}
				if len(kernels) == 0 {
					continue
				}
				if err := (&lessons.CheckStep{Impls: kernels, Problem: p}).Do(env, l, "racecheck"); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("racecheck: %v\n%s", err, tail(out.String()))
	}
}

func tail(s string) string {
	if i := strings.LastIndex(s[:max(0, len(s)-4000)], "\n"); i > 0 {
		return "…" + s[i:]
	}
	return s
}

// lastLine is the last non-empty line of s: a judged kernel's verdict.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
