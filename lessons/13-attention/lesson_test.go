package attention

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"cudarepl/lessons"
	_ "cudarepl/lessons/01-hello-gpu" // its recorded device: the GPU's memory, which the memory figure draws
	"cudarepl/lessons/attn"
	"cudarepl/lessons/lessontest"
	"cudarepl/numeric"
	"cudarepl/plots"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestMaskedReference: every row of the reference sums to 1, a causal row
// gives the keys after its query exactly 0, and the row is the softmax of
// the scaled scores: the ratio of two probabilities is exp(scale·Δx).
func TestMaskedReference(t *testing.T) {
	for _, causal := range []bool{false, true} {
		rows, S := 23, 7
		x := maskedInput(rows, S, 5)
		y := maskedReference(x, rows, S, maskedScale, causal)
		for r := range rows {
			keys := keysSeen(r, S, causal)
			sum := 0.0
			for j := range S {
				p := y[r*S+j]
				if j >= keys && p != 0 {
					t.Fatalf("causal %v: y[%d,%d] = %v, want 0 for a key after query %d", causal, r, j, p, r%S)
				}
				sum += p
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("causal %v: row %d sums to %v, want 1", causal, r, sum)
			}
			if r%maskedKinds != maskedRandom || keys < 2 {
				continue
			}
			got := y[r*S+1] / y[r*S]
			want := math.Exp(maskedScale * (float64(x[r*S+1]) - float64(x[r*S])))
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("causal %v: row %d: y[1]/y[0] = %v, want exp(scale·(x[1] − x[0])) = %v", causal, r, got, want)
			}
		}
	}
}

// planted computes a row of masked softmax in float32 as each kernel in
// testdata does, so that the check's verdict on the planted mistakes can
// be seen without a GPU; NaN stands for an element the kernel leaves
// unwritten, as the check's poison does.
var planted = map[string]func(row []float32, i int, scale float32, causal bool) []float32{
	"solution.cu": func(row []float32, i int, scale float32, causal bool) []float32 {
		return softmaxRow(row, scale, func(j int) bool { return causal && j > i }, false, false)
	},
	"mask_zero.cu": func(row []float32, i int, scale float32, causal bool) []float32 {
		z := make([]float32, len(row))
		for j, v := range row {
			if !(causal && j > i) {
				z[j] = v // the masked scores stay 0: scaled, still 0
			}
		}
		return softmaxRow(z, scale, func(int) bool { return false }, false, false)
	},
	"mask_diagonal.cu": func(row []float32, i int, scale float32, causal bool) []float32 {
		return softmaxRow(row, scale, func(j int) bool { return causal && j >= i }, false, false)
	},
	"scale_after_exp.cu": func(row []float32, i int, scale float32, causal bool) []float32 {
		return softmaxRow(row, scale, func(j int) bool { return causal && j > i }, true, false)
	},
	"mask_unwritten.cu": func(row []float32, i int, scale float32, causal bool) []float32 {
		return softmaxRow(row, scale, func(j int) bool { return causal && j > i }, false, true)
	},
}

// softmaxRow is the softmax of scale·row over the keys not masked, 0 for
// the others (NaN, unwritten, with leaveMasked); with scaleAfter, the
// scale multiplies the exponentials instead of the scores.
func softmaxRow(row []float32, scale float32, masked func(j int) bool, scaleAfter, leaveMasked bool) []float32 {
	pre, post := scale, float32(1)
	if scaleAfter {
		pre, post = 1, scale
	}
	m := float32(math.Inf(-1))
	for j, v := range row {
		if !masked(j) {
			m = max(m, pre*v)
		}
	}
	var d float32
	for j, v := range row {
		if !masked(j) {
			d += post * float32(math.Exp(float64(pre*v-m)))
		}
	}
	y := make([]float32, len(row))
	for j, v := range row {
		switch {
		case !masked(j):
			y[j] = post * float32(math.Exp(float64(pre*v-m))) / d
		case leaveMasked:
			y[j] = float32(math.NaN())
		}
	}
	return y
}

// TestPlantedVerdicts: run as a CPU model at every check size in order,
// as the judge runs a kernel, the solution passes them all and each
// planted mistake first fails with what the lesson plants it to fail with.
func TestPlantedVerdicts(t *testing.T) {
	l, err := lessons.Find("attention")
	if err != nil {
		t.Fatal(err)
	}
	p := maskedProblem()
	for _, pk := range l.Planted {
		if pk.Sanitize != "" {
			continue
		}
		kernel, ok := planted[pk.File]
		if !ok {
			t.Errorf("%s has no CPU model here", pk.File)
			continue
		}
		var verdict error
		for _, s := range p.CheckSizes {
			rows, S, causal := maskedShape(s)
			x := maskedInput(rows, S, uint64(rows)<<32|uint64(S)<<1|boolBit(causal))
			y := make([]float32, 0, rows*S)
			for r := range rows {
				y = append(y, kernel(x[r*S:(r+1)*S], r%S, maskedScale, causal)...)
			}
			want := maskedReference(x, rows, S, maskedScale, causal)
			if _, err := maskedCompare(y, want, rows, S, causal, numeric.TolFP32Sum(S)); err != nil {
				verdict = fmt.Errorf("masked_softmax_exercise %s: %w", maskedLabel(s), err)
				break
			}
		}
		t.Logf("%s: %v", pk.File, verdict)
		switch {
		case pk.Want == "" && verdict != nil:
			t.Errorf("%s: %v, want a pass", pk.File, verdict)
		case pk.Want != "" && (verdict == nil || !strings.Contains(verdict.Error(), pk.Want)):
			t.Errorf("%s: %v, want a failure with %q", pk.File, verdict, pk.Want)
		}
	}
}

// TestMaskedBytes: a causal row reads only the scores its query sees.
func TestMaskedBytes(t *testing.T) {
	for _, tc := range []struct {
		size lessons.Size
		want float64
	}{
		{lessons.Size{3, 3}, 4*9 + 4*9},
		{lessons.Size{3, 3, 1}, 4*(1+2+3) + 4*9},
		{lessons.Size{5, 3, 1}, 4*(1+2+3+1+2) + 4*15},
	} {
		if got := maskedBytes(tc.size); got != tc.want {
			t.Errorf("maskedBytes(%v) = %v, want %v", tc.size, got, tc.want)
		}
	}
}

// TestTraffic: the chain at S = 4096 moves 2 GiB of scores a pass; the
// mask writes (S − 1)·S/2 halves a head and reads nothing.
func TestTraffic(t *testing.T) {
	a := attn.Of(lessons.Size{benchB, benchH, breakdownS, benchD, 1})
	const gib = 1 << 30
	for _, tc := range []struct {
		part        string
		read, write float64
	}{
		{"scale_h", 2 * gib, 2 * gib},
		{"softmax_h", 2 * gib, 2 * gib},
		{"causal_mask_h", 0, 64 * 4096 * 4095},
		{"Q·Kᵀ (cuBLAS)", 2 * 64 * 4096 * 64 * 2, 2 * gib},
	} {
		r, w, _, ok := traffic(tc.part, a)
		if !ok || r != tc.read || w != tc.write {
			t.Errorf("traffic(%s) = %v read, %v written (%v), want %v, %v", tc.part, r, w, ok, tc.read, tc.write)
		}
	}
}

// figuresOf runs step of the lesson in replay and returns the figures it
// shows, and what it printed.
func figuresOf(t *testing.T, step string) ([]plots.Figure, string) {
	t.Helper()
	l, err := lessons.Find("attention")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	var figs []plots.Figure
	env.ShowFigure = func(f plots.Figure) error { figs = append(figs, f); return nil }
	for i, s := range l.Steps {
		if s.Title == step {
			if err := l.RunStep(env, i); err != nil {
				t.Fatal(err)
			}
			return figs, out.String()
		}
	}
	t.Fatalf("no step %q", step)
	return nil, ""
}

// TestMemoryFigures: the chain's throughput is drawn on a log axis, where
// the peak 16× above it would flatten it on a linear one, and S = 32768,
// out of memory, has no value there; the memory figure draws the device's
// memory as a line and the size that did not fit at what it would need,
// saying so; each chain keeps its look in both figures.
func TestMemoryFigures(t *testing.T) {
	figs, _ := figuresOf(t, "Memory grows as S²")
	if len(figs) != 2 {
		t.Fatalf("%d figures, want throughput and memory", len(figs))
	}
	rate, mem := figs[0].(plots.Lines), figs[1].(plots.Lines)
	var chart bytes.Buffer
	if err := plots.Terminal(&chart, rate, 80); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(chart.String(), "TFLOP/s, log scale") {
		t.Errorf("the throughput chart is not on a log axis:\n%s", chart.String())
	}
	for _, se := range rate.Series {
		if len(se.OutOfMemory) != 1 || se.OutOfMemory[0].Y != 0 || se.OutOfMemory[0].X != 32768 {
			t.Errorf("throughput: %s out of memory at %+v, want S = 32768 with no value", se.Name, se.OutOfMemory)
		}
	}
	device := false
	for _, c := range mem.Ceilings {
		device = device || c.Peak && strings.HasPrefix(c.Name, "device memory, 79.") && c.Value > 80000 && c.Value < 82000
	}
	if !device {
		t.Errorf("the memory figure has no line at the H100's 80 GB: %+v", mem.Ceilings)
	}
	for i, se := range mem.Series {
		if o := se.OutOfMemory; len(o) != 1 || !strings.HasPrefix(o[0].Label, "would need 25") {
			t.Errorf("memory: %s out of memory at %+v, want S = 32768 at what it would need", se.Name, o)
		}
		if se.Style == nil || rate.Series[i].Style == nil || *se.Style != *rate.Series[i].Style || se.Baseline {
			t.Errorf("%s is drawn %+v in one figure and %+v in the other (baseline %v)", se.Name, se.Style, rate.Series[i].Style, se.Baseline)
		}
	}
}
