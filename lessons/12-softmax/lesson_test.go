package softmax

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
	"cudarepl/numeric"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestReference: every row sums to 1, the order of the inputs is kept,
// and rows of values around ±100 come out finite.
func TestReference(t *testing.T) {
	const rows, cols = 8, 300
	x := input(rows, cols, 1)
	y := reference(x, rows, cols)
	for r := 0; r < rows; r++ {
		sum := 0.0
		for c := 0; c < cols; c++ {
			v := y[r*cols+c]
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("row %d (kind %d): y[%d] = %v", r, r%rowKinds, c, v)
			}
			sum += v
			if c > 0 && (x[r*cols+c] > x[r*cols+c-1]) != (v > y[r*cols+c-1]) {
				t.Fatalf("row %d: the order of x[%d], x[%d] is not kept", r, c-1, c)
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("row %d sums to %v", r, sum)
		}
	}
}

// TestCompare: the tolerance is relative to an element plus the row's
// mean, so a row scaled by 1.01 fails, an element far below the mean
// rounded to 0 passes, and a NaN fails with "not finite".
func TestCompare(t *testing.T) {
	const cols = 1000
	want := make([]float64, cols)
	for c := range want {
		want[c] = 1.0 / cols
	}
	want[0], want[1] = want[0]-1e-30, 1e-30 // a tiny element, which float32 may round to 0
	tests := []struct {
		desc    string
		edit    func(y []float32)
		wantErr string
	}{
		{"exact", func([]float32) {}, ""},
		{"the tiny element as 0", func(y []float32) { y[1] = 0 }, ""},
		{"one element 1% high", func(y []float32) { y[7] *= 1.01 }, "check: y[0,7]"},
		{"the row scaled by 1.01", func(y []float32) {
			for c := range y {
				y[c] *= 1.01
			}
		}, "999 of 1000 differ"}, // all but the tiny element
		{"a NaN", func(y []float32) { y[999] = float32(math.NaN()) }, "not finite"},
	}
	for _, tt := range tests {
		y := make([]float32, cols)
		for c := range y {
			y[c] = float32(want[c])
		}
		tt.edit(y)
		_, err := compare(y, want, 1, cols, numeric.TolFP32Sum(cols))
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: compare = %v, want %q", tt.desc, err, tt.wantErr)
		}
	}
}

// TestLaunchShapes: v5 gives a row the fewest threads that hold it at 32
// floats each, packing narrow rows into blocks of 256; v6 splits a row
// over 8 blocks of whole warps.
func TestLaunchShapes(t *testing.T) {
	for _, tc := range []struct{ cols, tx, ty int }{
		{1, 1, 256}, {128, 4, 64}, {1000, 32, 8}, {1024, 32, 8}, {1025, 64, 4}, {32768, 1024, 1},
	} {
		if tx, ty := kernels.SoftmaxBlock(tc.cols); tx != tc.tx || ty != tc.ty {
			t.Errorf("SoftmaxBlock(%d) = %d×%d, want %d×%d", tc.cols, tx, ty, tc.tx, tc.ty)
		}
		if tx, _ := kernels.SoftmaxBlock(tc.cols); 32*tx < tc.cols {
			t.Errorf("SoftmaxBlock(%d): %d threads hold only %d floats", tc.cols, tx, 32*tx)
		}
	}
	for _, tc := range []struct{ cols, threads int }{{16384, 64}, {20000, 96}, {70000, 288}, {262144, 1024}} {
		nt := v6Block(tc.cols)
		if nt != tc.threads || nt%32 != 0 || 8*32*nt < tc.cols {
			t.Errorf("v6Block(%d) = %d, want %d (a multiple of 32 holding an eighth of the row at 32 floats each)", tc.cols, nt, tc.threads)
		}
	}
}

// TestMemory: 2²⁶ elements need x and y on the device, 512 MiB and the
// guard, known before anything is allocated.
func TestMemory(t *testing.T) {
	m := memory(lessons.Size{elements / 1024, 1024}, 4)
	if want := int64(8*elements + 4*guardElems); m.Device != want {
		t.Errorf("device memory = %d, want %d", m.Device, want)
	}
}

// TestControls: the kernels that split v2 → v3 and v4 → v5 one change at
// a time are impls of the problem, checked with the versions, but stay out
// of the Bandwidth step's ladder.
func TestControls(t *testing.T) {
	names := map[string]bool{}
	for _, im := range problem().Impls {
		names[im.Name] = true
	}
	for _, n := range ladder {
		if !names[n] {
			t.Errorf("the Bandwidth step measures %s, which the problem does not have", n)
		}
	}
	for _, n := range []string{shfl, shflFastExp, packed} {
		if !names[n] {
			t.Errorf("control %s is not an impl of the problem", n)
		}
		if slices.Contains(ladder, n) {
			t.Errorf("control %s is in the Bandwidth step's ladder", n)
		}
	}
}

// TestBlockShowsTheLaunch: the block column shows the launch that ran.
// v5, softmax_h and v4_packed choose their block by the width (1024
// threads at 32768 columns), v6 its cluster's blocks; the recorded
// results say so, and the Bandwidth table prints it, with no block for a
// size refused, which launched nothing.
func TestBlockShowsTheLaunch(t *testing.T) {
	l, err := lessons.Find("softmax")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Recorded().Results {
		if r.Kind != "bench" || r.Outcome != "" {
			continue
		}
		want := 256
		switch r.Variant {
		case cudnnName, cudnnHalf:
			want = 0
		case "softmax_v5", "softmax_h", packed:
			tx, ty := kernels.SoftmaxBlock(r.Dims[1])
			want = tx * ty
		case "softmax_v6":
			want = v6Block(r.Dims[1])
		}
		if r.Block != want {
			t.Errorf("%s %s at %s: block %d recorded, want %d, the launch that ran", r.Step, r.Variant, r.Size, r.Block, want)
		}
	}
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	for i, s := range l.Steps {
		if s.Title == "Bandwidth" {
			if err := l.RunStep(env, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, row := range []*regexp.Regexp{
		regexp.MustCompile(`softmax_v5 +2048 × 32768 +1024 `),
		regexp.MustCompile(`softmax_v5 +524288 × 128 +256 `),
		regexp.MustCompile(`softmax_v6 +2048 × 32768 +128 `),
		regexp.MustCompile(`softmax_v6 +524288 × 128 +— +refused`),
	} {
		if !row.MatchString(out.String()) {
			t.Errorf("the Bandwidth table has no row like %q:\n%s", row, out.String())
		}
	}
}

// TestChartLinesMatchTheProse: the Bandwidth step says "the dashed line is
// this GPU's device-to-device copy … the dotted line is the DRAM peak";
// the terminal chart draws them so, as the figure does.
func TestChartLinesMatchTheProse(t *testing.T) {
	l, err := lessons.Find("softmax")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	for i, s := range l.Steps {
		if s.Title != "Bandwidth" {
			continue
		}
		if !strings.Contains(s.Prose, "dashed line is this GPU's\ndevice-to-device copy") || !strings.Contains(s.Prose, "dotted line is the DRAM peak") {
			t.Fatalf("the Bandwidth step no longer says which line is dashed:\n%s", s.Prose)
		}
		if err := l.RunStep(env, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"╌ device-to-device copy", "┈ DRAM bandwidth"} { // ╌ dashed, ┈ dotted
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chart's legend lacks %q:\n%s", want, out.String())
		}
	}
}
