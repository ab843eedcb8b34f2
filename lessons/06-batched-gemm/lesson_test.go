package batchedgemm

import (
	"bytes"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestFloat4Rows(t *testing.T) {
	if err := float4Rows(lessons.Size{40, 256, 256, 256}); err != nil {
		t.Errorf("256³: %v", err)
	}
	if err := float4Rows(lessons.Size{3, 17, 33, 65}); err == nil || !strings.Contains(err.Error(), "got K=65 N=33") {
		t.Errorf("17×33×65: %v", err)
	}
}

// TestLaunchTable: the table of the four ways at a batch of 40 reads the
// sweep's results and sets the GPU-time floor of forty calls under it.
func TestLaunchTable(t *testing.T) {
	var out bytes.Buffer
	l, _ := lessons.Find("batched-gemm")
	i, _ := l.StepNamed("One call or forty")
	if err := l.RunStep(lessontest.ReplayEnv(t, &out), i); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"× faster than 40 cuBLAS calls", "cuBLAS, one call each", "matmul_batched_v4", "forty in a row need at least"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("launch table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestMemoryOfABatch(t *testing.T) {
	one := lessons.MatmulMemory(4, 4)(lessons.Size{256, 256, 256})
	forty := problem().Memory(lessons.Size{40, 256, 256, 256})
	if forty.Device != 40*one.Device {
		t.Errorf("40 products take %d bytes, want 40 × %d", forty.Device, one.Device)
	}
}
