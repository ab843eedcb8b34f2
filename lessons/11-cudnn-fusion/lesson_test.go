package cudnnfusion

import (
	"io/fs"
	"testing"

	"cudarepl/kernels"
	"cudarepl/lessons/conv"
	"cudarepl/lessons/lessontest"
	"cudarepl/nvrtc"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestTraffic: unfused, y crosses memory five times (written by the
// convolution, read and written by the bias kernel and again by the ReLU);
// fused, once.
func TestTraffic(t *testing.T) {
	s := conv.Of(benchShape)
	y := int64(2 * s.N * s.K * s.H * s.W)
	if d := traffic(s, unfused) - traffic(s, fused); d != 4*y {
		t.Errorf("unfused moves %d bytes more than fused, want 4·y = %d", d, 4*y)
	}
	if d := traffic(s, unfusedOne) - traffic(s, fused); d != 2*y {
		t.Errorf("one bias+ReLU kernel moves %d bytes more than fused, want 2·y = %d", d, 2*y)
	}
	if d := traffic(s, fused) - traffic(s, convAlone); d != int64(2*s.K) {
		t.Errorf("fused moves %d bytes more than the conv alone, want the bias, %d", d, 2*s.K)
	}
}

// TestRebuildRowsDiffer: every row of the rebuild table has a name of its
// own, since the times are gathered by name.
func TestRebuildRowsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range []string{loadCUDNN, firstBuild, firstInside, rebuilt, rebuiltIn, lookup, roundTrip} {
		if seen[name] {
			t.Errorf("two rows of the rebuild table are called %q", name)
		}
		seen[name] = true
	}
}

// TestExerciseTakesTheCourseKernelsParameters: the exercise runs in place
// of bias_relu_nhwc, with its arguments, so the starter's kernel and every
// planted one must take what bias_relu_nhwc takes.
func TestExerciseTakesTheCourseKernelsParameters(t *testing.T) {
	course, err := kernels.Source("bias_relu.cu")
	if err != nil {
		t.Fatal(err)
	}
	want := signature(t, course, "bias_relu_nhwc")
	planted, _ := fs.Glob(files, "testdata/*.cu")
	for _, f := range append(planted, "exercise.cu") {
		b, err := files.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := signature(t, nvrtc.Source{Name: f, Code: string(b)}, "bias_relu_exercise"); !got.Takes(want) {
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
