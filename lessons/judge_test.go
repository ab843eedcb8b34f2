package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/nvrtc"
)

// TestVerdictString: each kind of verdict's line, a time-out with what a
// kernel that never ends most likely does.
func TestVerdictString(t *testing.T) {
	hang := &gpu.WorkerError{Op: "run k", Cause: "ran past the 10s time limit", TimedOut: true}
	fault := &gpu.WorkerError{Op: "run k", Cause: "faulted"}
	for _, c := range []struct {
		v    Verdict
		want string
	}{
		{Verdict{Kernel: "k", Like: "v1", Judged: true}, "k passes every check v1 passes."},
		{Verdict{Kernel: "k", Judged: true, Err: fmt.Errorf("k n=1: %w", hang)},
			"FAILED: k: k n=1: gpu: run k ran past the 10s time limit; a fresh worker was started (device memory and graphs from before are gone): " + timeoutHint},
		{Verdict{Kernel: "k", Judged: true, Err: fmt.Errorf("k n=1: %w", fault)},
			"FAILED: k: k n=1: gpu: run k faulted; a fresh worker was started (device memory and graphs from before are gone)"},
		{Verdict{Kernel: "k", Err: errors.New("no GPU")}, "k was not judged: no GPU"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("Verdict%+v.String() =\n%q\nwant\n%q", c.v, got, c.want)
		}
	}
}

// TestFastEnough: an exercise that must be fast passes at its speed and
// fails below it with both figures, against the ceiling, the version it is
// judged like, or another version timed beside it.
func TestFastEnough(t *testing.T) {
	p := &Problem{Name: "copy", Unit: "GB/s",
		Impls:  []Impl{{Name: "v1", Library: true}, {Name: "lib", Library: true}},
		Setup:  func(*Env, Size) (Case, error) { return fakeCase{}, nil },
		Memory: func(Size) Memory { return Memory{} },
		// 1 ms a run on the fake device: 1000 GB/s for "lib".
		Work: func(Size) float64 { return 1e9 },
	}
	l := &Lesson{Slug: "x"}
	mine := Result{Variant: "mine (yours)", Throughput: 800, Unit: "GB/s", Ceiling: 1000, CeilingName: "the copy"}
	course := Result{Variant: "v1", Throughput: 900}
	for _, tc := range []struct {
		name string
		fast Speed
		want string // "" for a pass
	}{
		{"ceiling, fast enough", Speed{Min: 0.8}, ""},
		{"ceiling, too slow", Speed{Min: 0.85}, "correct but too slow: 800.0 GB/s at n=4 is 0.80 of the copy (1000.0 GB/s); a pass needs at least 0.85"},
		{"too slow, and why", Speed{Min: 0.85, Why: "read along rows"}, "a pass needs at least 0.85: read along rows"},
		{"the version it is like", Speed{Against: "v1", Min: 0.9}, "0.89 of v1 (900.0 GB/s)"},
		{"another version, timed beside", Speed{Against: "lib", Min: 0.9}, "0.80 of lib (1000.0 GB/s)"},
		{"another version, fast enough", Speed{Against: "lib", Min: 0.5}, ""},
		{"no such version", Speed{Against: "nope", Min: 0.5}, `has no variant "nope"`},
	} {
		var out bytes.Buffer
		env := liveEnv(&fakeDev{}, View{Out: &out})
		err := env.fastEnough(l, p, Size{4}, tc.fast, mine, course)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want a pass", tc.name, err)
		case tc.want == "" && !strings.Contains(out.String(), "fast enough"):
			t.Errorf("%s: printed %q, want it to say fast enough", tc.name, out.String())
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestPickKernelChecksParameters: a kernel found by its name (the
// exercise's, or one named with --variant) is judged like a version only
// if it takes what that version takes.
func TestPickKernelChecksParameters(t *testing.T) {
	l := &Lesson{Kernels: "vector_add.cu", Exercise: &Exercise{File: "vadd_exercise.cu", Kernel: "vadd_exercise", Like: "vadd_v1",
		Starter: `extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {}`}}
	fp32 := `extern "C" __global__ void vadd_exercise(const float* a, const float* b, float* c, int n) {}`
	fp16 := `extern "C" __global__ void vadd_exercise(const __half* a, const __half* b, __half* c, int n) {}` +
		"\n" + `extern "C" __global__ void mine(const __half* a, int n) {}`
	for _, c := range []struct {
		code, name, like string
		want             string // the kernel picked, or part of the error
	}{
		{fp32, "", "vadd_v1", "vadd_exercise"},
		{fp32, "", "vadd_v3", "vadd_exercise"},
		{fp16, "", "vadd_v1", "vadd_exercise takes (const __half*, const __half*, __half*, int), but vadd_v1 takes (const float*, const float*, float*, int)"},
		{fp16, "mine", "vadd_v2", "mine takes (const __half*, int), but vadd_v2 takes"},
		{fp16, "mine", "nothing_known", "mine"},
	} {
		s, err := pickKernel(l, nvrtc.Source{Name: "mine.cu", Code: c.code}, c.name, c.like)
		got := s.Name
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("pickKernel(%q, like %s) = %q; want %q", c.name, c.like, got, c.want)
		}
	}
}
