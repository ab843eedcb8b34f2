package cudnnconv

import (
	"io/fs"
	"slices"
	"testing"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/lessons/conv"
	"cudarepl/lessons/lessontest"
	"cudarepl/nvrtc"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestLegacyCaseName(t *testing.T) {
	for _, tc := range []struct {
		lc   legacyCase
		want string
	}{
		{legacyCase{variant{gpu.FP16, true}, false}, "NHWC float16: implicit precomputed GEMM"},
		{legacyCase{variant{gpu.FP32, false}, false}, "NCHW float32, FP32 units: implicit precomputed GEMM"},
		{legacyCase{variant{gpu.FP32, false}, true}, "NCHW float32, TF32 allowed: implicit precomputed GEMM"},
	} {
		if got := tc.lc.name("implicit precomputed GEMM"); got != tc.want {
			t.Errorf("name = %q, want %q", got, tc.want)
		}
	}
}

// TestLegacyCasesBesideGraphs: the graph API's pick is set beside the
// legacy cases that compute as it may (fp16, and fp32 with TF32 allowed),
// and each such graph is one the sweep runs, in the same type and layout.
func TestLegacyCasesBesideGraphs(t *testing.T) {
	beside := 0
	for _, lc := range legacyCases {
		name := lc.graphOf()
		if name == "" {
			if lc.dt != gpu.FP32 || lc.tf32 {
				t.Errorf("%s has no graph beside it", lc.name("…"))
			}
			continue
		}
		beside++
		if !slices.Contains(graphs, name) || variants[name] != lc.variant {
			t.Errorf("%s is set beside %q, which is not a graph of its type and layout", lc.name("…"), name)
		}
	}
	if beside != 2 {
		t.Errorf("%d legacy cases have a graph beside them, want 2", beside)
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCheckSizesLeaveTheFastPath: some check shapes have C and K that are
// not multiples of 8, off the fast path of cuDNN's fp16 kernels.
func TestCheckSizesLeaveTheFastPath(t *testing.T) {
	var c, k bool
	for _, s := range problem().CheckSizes {
		sh := conv.Of(s)
		c, k = c || sh.C%8 != 0, k || sh.K%8 != 0
	}
	if !c || !k {
		t.Errorf("every check shape has C (%v) or K (%v) a multiple of 8", !c, !k)
	}
}

// TestDirectIsTheLadder: the direct kernel the exercise is judged like is
// conv.cu's ladder, its only version.
func TestDirectIsTheLadder(t *testing.T) {
	ladder := lessons.LadderImpls("conv.cu")
	if len(ladder) != 1 || ladder[0].Name != direct {
		t.Errorf("conv.cu's ladder is %v, want %s alone", ladder, direct)
	}
}

// TestEveryImplHasAVariant: each impl of the problem names a way to store
// and compute the convolution.
func TestEveryImplHasAVariant(t *testing.T) {
	for _, im := range problem().Impls {
		if _, ok := variants[im.Name]; !ok {
			t.Errorf("impl %q has no variant", im.Name)
		}
	}
}

// TestMemory: the buffers of all four graph variants, fp16 at 2 bytes and
// fp32 at 4, each in two layouts; the direct kernel runs on fp32 NHWC's.
func TestMemory(t *testing.T) {
	s := lessons.Size{1, 1, 1, 1, 1} // x, w (9 taps), bias and y: 12 elements a set
	if got := memory(s).Device; got != 2*2*12+2*4*12 {
		t.Errorf("memory of a 1×1×1×1 → 1 convolution = %d bytes, want %d", got, 2*2*12+2*4*12)
	}
}

// TestExerciseTakesTheCourseKernelsParameters: the exercise is launched as
// conv_direct is, with its arguments, so the starter's kernel and every
// planted one must take what conv_direct takes.
func TestExerciseTakesTheCourseKernelsParameters(t *testing.T) {
	course, err := kernels.Source("conv.cu")
	if err != nil {
		t.Fatal(err)
	}
	want := signature(t, course, direct)
	planted, _ := fs.Glob(files, "testdata/*.cu")
	for _, f := range append(planted, "exercise.cu") {
		b, err := files.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := signature(t, nvrtc.Source{Name: f, Code: string(b)}, "conv_direct_exercise"); !got.Takes(want) {
			t.Errorf("%s: %s, want the parameters of %s", f, got, want)
		}
	}
}

// signature is kernel name's signature in src.
func signature(t *testing.T, src nvrtc.Source, name string) kernels.Signature {
	t.Helper()
	for _, s := range kernels.Signatures(src) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s declares no kernel %s", src.Name, name)
	return kernels.Signature{}
}
