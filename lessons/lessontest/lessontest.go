// Package lessontest is what every lesson folder's own test runs, so that
// a new lesson's folder brings its test with it: the lesson replayed end
// to end without a GPU, its planted kernels compiled and judged as far as
// this machine allows. A lesson's test adds its own CPU references.
package lessontest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/nvrtc"
)

// Run runs every shared test of the lesson whose folder the test runs
// in, as go test runs a package's tests: the lesson registered with the
// number and slug the folder is named after (lessons/02-vector-add is
// Number 2, Slug "vector-add").
func Run(t *testing.T) {
	t.Helper()
	l, err := here()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("replay", func(t *testing.T) { Replay(t, l) })
	t.Run("planted", func(t *testing.T) { Planted(t, l) })
}

// here is the lesson registered for the working directory's folder.
func here() (*lessons.Lesson, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	folder := filepath.Base(dir)
	var registered []string
	for _, l := range lessons.All() {
		if l.Folder() == folder {
			return l, nil
		}
		registered = append(registered, l.Folder())
	}
	return nil, fmt.Errorf("lessontest: no lesson is registered as %s, the folder the test runs in (registered: %s); the Def's Number and Slug name its folder",
		folder, strings.Join(registered, ", "))
}

// ReplayEnv is an Env without a GPU, as CI has, writing to out.
func ReplayEnv(t *testing.T, out *bytes.Buffer) *lessons.Env {
	return lessons.Replay(errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"),
		lessons.View{Out: out, PlotDir: t.TempDir(), Workspace: t.TempDir(), Width: 80})
}

// Replay runs l end to end without a GPU: every step runs, every sweep
// draws its figures from results recorded with the lesson, and the output
// says that they are replayed.
func Replay(t *testing.T, l *lessons.Lesson) {
	var out bytes.Buffer
	env := ReplayEnv(t, &out)
	if err := l.RunAll(env); err != nil {
		t.Fatalf("%s in replay: %v\n%s", l.Slug, err, out.String())
	}
	if len(l.Recorded().Results) == 0 {
		t.Fatalf("%s has no recorded results to replay", l.Slug)
	}
	want := 0
	for i, s := range l.Steps {
		figures := l.StepFigures(i)
		if len(figures) == 0 {
			continue
		}
		if len(l.Recorded().Filter(s.Title, "bench")) == 0 {
			t.Errorf("%s: nothing recorded for sweep %q", l.Slug, s.Title)
		}
		want += len(figures)
	}
	pngs, _ := filepath.Glob(filepath.Join(env.PlotDir, "*.png"))
	if len(pngs) < want {
		t.Errorf("%s: %d figures written, want at least %d (one per sweep, and one more for memory and for a ladder)", l.Slug, len(pngs), want)
	}
	if !strings.Contains(out.String(), "replayed from") {
		t.Errorf("%s: replay output never says it is replayed:\n%s", l.Slug, out.String())
	}
	if strings.Contains(out.String(), "passes the GPU's peak") {
		t.Errorf("%s: a recorded result passes the GPU's peak:\n%s", l.Slug, out.String())
	}
}

// Planted judges each of l's planted kernels as far as a machine without
// a GPU can: with NVRTC, every one compiles, but for those planted not to
// (and those that need the CUDA toolkit's headers where there are none,
// which must fail with a hint naming the header). A planted plan (an
// exercise that is not a kernel) needs no NVRTC: it reads and waits for a
// GPU, or fails as planted where its mistake shows in what it says.
func Planted(t *testing.T, l *lessons.Lesson) {
	_, noNVRTC := nvrtc.Version()
	skipped := 0
	for _, pk := range l.Planted {
		plan := l.Exercise.PlanFile(pk.File)
		if !plan && noNVRTC != nil {
			skipped++
			continue
		}
		code, err := l.PlantedCode(pk)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		v, err := ReplayEnv(t, &out).Judge(l, lessons.Submission{File: pk.File, Code: code, Like: pk.Like})
		if err != nil {
			t.Errorf("%s: %v", pk.File, err)
			continue
		}
		var ce *nvrtc.CompileError
		switch {
		case plan && pk.Want != "":
			if !v.Judged || v.Err == nil || !strings.Contains(v.Err.Error(), pk.Want) {
				t.Errorf("%s was planted to fail with %q before it runs, but: %v", pk.File, pk.Want, v)
			}
		case strings.Contains(pk.Want, "does not compile"):
			if !errors.As(v.Err, &ce) {
				t.Errorf("%s was planted not to compile, but: %v", pk.File, v)
			}
		case pk.NeedsHeaders && len(nvrtc.IncludeDirs()) == 0:
			if !errors.As(v.Err, &ce) || ce.Hint == "" {
				t.Errorf("%s needs the toolkit's headers, which are not here; want a compile error with a hint, got %v", pk.File, v)
			}
		case !errors.Is(v.Err, lessons.ErrNeedsGPU):
			t.Errorf("%s: %v, want it compiled and waiting for a GPU\n%s", pk.File, v, out.String())
		}
	}
	if skipped > 0 {
		t.Skipf("%s %s NVRTC to compile: %v", lessons.Count(skipped, "planted kernel"), lessons.Plural(skipped, "needs|need"), noNVRTC)
	}
}

// Judge judges pk on env's GPU, under compute-sanitizer where pk says so,
// and reports whether the verdict is the one planted: a pass when Want is
// empty, else a failure whose reason contains Want.
func Judge(env *lessons.Env, l *lessons.Lesson, pk lessons.Planted) error {
	code, err := l.PlantedCode(pk)
	if err != nil {
		return err
	}
	judge := func(env *lessons.Env) error {
		v, err := env.Judge(l, lessons.Submission{File: pk.File, Code: code, Like: pk.Like})
		if err != nil {
			return err
		}
		if !v.Passed() {
			return errors.New(v.String())
		}
		return nil
	}
	if pk.Sanitize != "" {
		err = env.Sanitize(pk.Sanitize, judge)
		var se *lessons.SanitizerError
		if errors.As(err, &se) {
			var found []string
			for _, f := range se.Findings {
				found = append(found, f.String())
			}
			err = fmt.Errorf("%w: %s", err, strings.Join(found, "; "))
		}
	} else {
		err = judge(env)
	}
	switch {
	case pk.Want == "" && err != nil:
		return err
	case pk.Want != "" && err == nil:
		return errors.New("passed, but was planted to fail with " + pk.Want)
	case pk.Want != "" && !strings.Contains(err.Error(), pk.Want):
		return errors.New("failed for another reason than " + pk.Want + ": " + err.Error())
	}
	return nil
}
