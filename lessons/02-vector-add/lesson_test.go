package vectoradd

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
	"cudarepl/numeric"
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

// TestInputsRound: the inputs' float32 sums round, so the check measures
// float32's rounding (at most half a last bit, 2⁻²⁴ of the sum), far
// under its tolerance; inputs both within ±1 would add exactly.
func TestInputsRound(t *testing.T) {
	const n = 100000
	a, b, want := inputs(n)
	rounded, worst := 0, 0.0
	for i := range a {
		sum := float64(a[i] + b[i])
		if sum != want[i] {
			rounded++
		}
		worst = max(worst, math.Abs(sum-want[i])/(math.Abs(want[i])+1))
	}
	if rounded < n*9/10 {
		t.Errorf("%d of %d float32 sums rounded, want most of them", rounded, n)
	}
	if limit := math.Ldexp(1, -24); worst == 0 || worst > limit || worst > numeric.TolFP32/100 {
		t.Errorf("worst relative error of a float32 sum = %.3g, want above 0, at most 2⁻²⁴ (%.3g) and 100 times under the tolerance %g",
			worst, limit, numeric.TolFP32)
	}
}

func TestPTXLoads(t *testing.T) {
	ptx := ".visible .entry k(\n\t.param .u64 p\n)\n{\n\tld.param.u64 \t%rd1, [p];\n" +
		"\tld.global.nc.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd8];\n\tld.global.nc.v4.f32 \t{%f9, %f10, %f11, %f12}, [%rd9];\n" +
		"\tst.global.v4.f32 \t[%rd10], {%f1, %f2, %f3, %f4};\n\tld.global.f32 \t%f21, [%rd13];\n}\n" +
		".visible .entry other(\n)\n{\n\tld.global.u32 \t%r1, [%rd1];\n}\n"
	tests := []struct {
		name string
		want string
	}{
		{"k", "2 × ld.global.nc.v4.f32|1 × ld.global.f32"},
		{"other", "1 × ld.global.u32"},
		{"missing", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(ptxLoads(ptx, tt.name), "|"); got != tt.want {
			t.Errorf("ptxLoads(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestChangesTable: each change over the version it changes, the median of
// the rounds' ratios with their range; a change whose versions were not
// both measured has no row.
func TestChangesTable(t *testing.T) {
	rs := []lessons.Result{
		{Variant: v1, Size: "n=67108864", Throughput: 100, Rounds: []float64{100, 90, 110}},
		{Variant: v2, Size: "n=67108864", Throughput: 106, Rounds: []float64{105, 99, 121}},
		{Variant: v3, Size: "n=67108864", Throughput: 126, Rounds: []float64{126, 117, 132}},
		{Variant: restrict, Size: "n=67108864", Outcome: lessons.Skipped},
	}
	var b bytes.Buffer
	tab := changesTable(rs)
	tab.Write(&b)
	for _, want := range []string{"a grid-stride loop: vadd_v2 ÷ vadd_v1", "1.100 (1.050–1.100)", "1.260 (1.200–1.300)", "median of 3 rounds"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("changes table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), restrict) {
		t.Errorf("changes table has a row for %s, which was not measured:\n%s", restrict, b.String())
	}
}
