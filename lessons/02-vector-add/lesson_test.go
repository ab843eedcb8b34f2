package vectoradd

import (
	"bytes"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestLaunchTable(t *testing.T) {
	var b bytes.Buffer
	writeLaunchTable(&b, 256, []int{1, 1000, 1 << 20})
	for _, want := range []string{"           1       256         1             256            255", "        1000       256         4            1024             24", "     1048576       256      4096         1048576              0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("launch table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestMemory: three vectors and the guard on the device, known before
// anything is allocated; 2^33 elements need 96 GiB.
func TestMemory(t *testing.T) {
	m := memory(lessons.Size{1 << 33})
	if want := int64(12<<33 + 4*guardElems); m.Device != want {
		t.Errorf("device memory of 2^33 = %d, want %d", m.Device, want)
	}
	if m.Host < 16<<33 {
		t.Errorf("host memory of 2^33 = %d, less than a, b and the float64 reference", m.Host)
	}
}
