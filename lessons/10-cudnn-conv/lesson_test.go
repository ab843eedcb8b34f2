package cudnnconv

import (
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestLegacyName(t *testing.T) {
	if got := legacyName(variant{gpu.FP16, true}, "IMPLICIT_PRECOMP_GEMM"); got != "NHWC float16: IMPLICIT_PRECOMP_GEMM" {
		t.Errorf("legacyName = %q", got)
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

// TestMemory: the buffers of all four variants, fp16 at 2 bytes and fp32
// at 4, each in two layouts.
func TestMemory(t *testing.T) {
	s := lessons.Size{1, 1, 1, 1, 1} // x, w (9 taps), bias and y: 12 elements a set
	if got := memory(s).Device; got != 2*2*12+2*4*12 {
		t.Errorf("memory of a 1×1×1×1 → 1 convolution = %d bytes, want %d", got, 2*2*12+2*4*12)
	}
}
