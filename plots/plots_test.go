package plots

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// sample is a fixed figure: made-up timings in the shape of a real sweep.
func sample() Lines {
	return Lines{
		Title:    "Vector add bandwidth, NVIDIA H100 80GB HBM3",
		Subtitle: "replayed from NVIDIA H100 80GB HBM3, 2026-11-22",
		XLabel:   "elements (n)", YLabel: "GB/s", LogX: true,
		Series: []Series{
			{Name: "vadd_v1", X: []float64{1 << 16, 1 << 20, 1 << 24, 1 << 26}, Y: []float64{180, 1500, 2600, 2700}},
			{Name: "vadd_v3", X: []float64{1 << 16, 1 << 20, 1 << 24, 1 << 26}, Y: []float64{200, 1700, 2900, 2990}},
		},
		Ceilings: []Ceiling{{Name: "device-to-device copy, 2919 GB/s", Value: 2919}},
	}
}

func sampleBars() Bars {
	return Bars{
		Title: "Matmul ladder, % of cuBLAS", Subtitle: "live, 2026-11-22", YLabel: "% of cuBLAS",
		Groups:   []string{"v1 naive", "v2 coalesced", "v3 tiled"},
		Series:   []BarSeries{{Name: "4096³", Values: []float64{2.5, 14, 31.25}}},
		Ceilings: []Ceiling{{Name: "cuBLAS", Value: 100}},
	}
}

// sampleStacked is where a chain's time goes: parts that add up, one
// of them absent from one group.
func sampleStacked() Bars {
	return Bars{
		Title: "Where the time goes", Subtitle: "live, 2026-11-23", YLabel: "ms", Stacked: true,
		Groups: []string{"chain", "chain, scale in α"},
		Series: []BarSeries{
			{Name: "Q·Kᵀ", Values: []float64{0.6, 0.6}},
			{Name: "scale", Values: []float64{0.9, 0}},
			{Name: "softmax", Values: []float64{1.1, 1.1}},
			{Name: "P·V", Values: []float64{0.5, 0.5}},
		},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is meant):\n%s", name, got)
	}
}

func TestTerminalGolden(t *testing.T) {
	tests := []struct {
		name string
		fig  Figure
	}{
		{"lines.golden", sample()},
		{"bars.golden", sampleBars()},
		{"lines_wide.golden", sampleWide()},
		{"stacked.golden", sampleStacked()},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := Terminal(&b, tt.fig, 72); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		golden(t, tt.name, b.Bytes())
	}
}

// sampleWide spans more than 100× (so its y axis is logarithmic), has a
// baseline, and a series whose largest size ran out of memory.
func sampleWide() Lines {
	f := sample()
	f.Title = "fp32 matmul throughput, NVIDIA H100 80GB HBM3"
	f.Series = append(f.Series, Series{Name: "cuBLAS", Baseline: true, X: []float64{1 << 16, 1 << 20, 1 << 24}, Y: []float64{2, 900, 2800},
		OutOfMemory: []Point{{X: 1 << 26}}})
	return f
}

func TestSVGGolden(t *testing.T) {
	for name, fig := range map[string]Figure{"lines_golden.svg": sample(), "bars_golden.svg": sampleBars(), "lines_wide_golden.svg": sampleWide(), "stacked_golden.svg": sampleStacked()} {
		svg, err := Encode(fig, "svg")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"GB/s", "% of cuBLAS"} {
			if !strings.Contains(name, "stacked") && strings.Contains(name, "lines") == (want == "GB/s") && !bytes.Contains(svg, []byte(want)) {
				t.Errorf("%s: no %q in the SVG", name, want)
			}
		}
		golden(t, name, svg)
	}
}

// sampleTimeline is a serial copy, compute, copy and the same in two
// chunks on two streams.
func sampleTimeline() Timeline {
	return Timeline{Title: "Copy and compute", Subtitle: "made up", XLabel: "time (ms)",
		Lanes: []string{"serial", "stream 1", "stream 2"},
		Spans: []Span{
			{0, "copy in", 0, 4}, {0, "compute", 4, 8}, {0, "copy out", 8, 12},
			{1, "copy in", 0, 2}, {1, "compute", 2, 4}, {1, "copy out", 4, 6},
			{2, "copy in", 2, 4}, {2, "compute", 4, 6}, {2, "copy out", 6, 8},
		}}
}

func TestTimeline(t *testing.T) {
	var b bytes.Buffer
	if err := Terminal(&b, sampleTimeline(), 40); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"Copy and compute",
		"made up",
		"  serial │█████████▒▒▒▒▒▒▒▒▒▒▓▓▓▓▓▓▓▓▓▓",
		"stream 1 │████▒▒▒▒▒▓▓▓▓▓               ",
		"stream 2 │    █████▒▒▒▒▒▓▓▓▓▓          ",
		"         └─────────────────────────────",
		"          0                          12",
		"          time (ms)",
		"          █ copy in   ▒ compute   ▓ copy out",
		""}, "\n")
	if b.String() != want {
		t.Errorf("terminal timeline:\n%s\nwant:\n%s", b.String(), want)
	}
	svg, err := Encode(sampleTimeline(), "svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Copy and compute", "stream 2", "copy out", "time (ms)"} {
		if !bytes.Contains(svg, []byte(s)) {
			t.Errorf("no %q in the timeline's SVG", s)
		}
	}
}

func TestSave(t *testing.T) {
	dir := t.TempDir()
	paths, err := Save(sample(), dir, "vector-add")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 {
		t.Fatalf("Save wrote %v, want a PNG and an SVG", paths)
	}
	png, _ := os.ReadFile(paths[0])
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG", paths[0])
	}
}

func TestBadFigures(t *testing.T) {
	tests := []struct {
		desc string
		fig  Figure
		want string
	}{
		{"no series", Lines{Title: "empty"}, `"empty" has no data`},
		{"ragged series", Lines{Title: "r", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1}}}}, `series "s" has 2 x and 1 y values`},
		{"bars without groups", Bars{Title: "b", Series: []BarSeries{{Name: "s"}}}, `"b" has no data`},
		{"short bar series", Bars{Title: "b", Groups: []string{"a", "b"}, Series: []BarSeries{{Name: "s", Values: []float64{1}}}}, "has 1 values for 2 groups"},
		{"timeline without lanes", Timeline{Title: "t"}, "timeline has no lanes"},
		{"timeline without spans", Timeline{Title: "t", Lanes: []string{"s"}}, "timeline has no spans"},
		{"span on no lane", Timeline{Lanes: []string{"s"}, Spans: []Span{{Lane: 1, Kind: "copy", End: 1}}}, "span 0 is on lane 1; there are 1"},
		{"span backwards", Timeline{Lanes: []string{"s"}, Spans: []Span{{Kind: "copy", Start: 2, End: 1}}}, "span 0 (copy) ends at 1, before it starts at 2"},
		{"span not finite", Timeline{Lanes: []string{"s"}, Spans: []Span{{Kind: "copy", End: math.NaN()}}}, "is not finite"},
	}
	for _, tt := range tests {
		_, err := tt.fig.Plot()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Plot() = %v, want %q", tt.desc, err, tt.want)
		}
		if err := Terminal(&bytes.Buffer{}, tt.fig, 60); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Terminal = %v, want %q", tt.desc, err, tt.want)
		}
	}
}

// TestSeriesStylesDiffer: no two of the first seven series, kernels and
// baselines mixed, are drawn alike, and every baseline is dashed.
func TestSeriesStylesDiffer(t *testing.T) {
	seen := map[string]int{}
	kinds := map[bool]int{}
	for i := range 7 {
		baseline := i%2 == 1
		st := seriesStyle(i, kinds[baseline], baseline)
		kinds[baseline]++
		key := fmt.Sprintf("%v %T %v", st.colour, st.glyph, st.dashes)
		if j, dup := seen[key]; dup {
			t.Errorf("series %d is drawn like series %d: %s", i, j, key)
		}
		seen[key] = i
		if baseline != (len(st.dashes) > 0) {
			t.Errorf("series %d: baseline %v, dashes %v", i, baseline, st.dashes)
		}
	}
}

func TestLogAxisWhenWide(t *testing.T) {
	tests := []struct {
		values []float64
		log    bool
	}{
		{[]float64{0.5, 52}, true},
		{[]float64{100, 2900}, false},
		{[]float64{0, 1, 99}, false}, // zeros do not count
	}
	for _, tt := range tests {
		b := Bars{Groups: make([]string, len(tt.values)), Series: []BarSeries{{Values: tt.values}}}.withAxes()
		l := Lines{Series: []Series{{X: tt.values, Y: tt.values}}}.withAxes()
		if b.LogY != tt.log || l.LogY != tt.log {
			t.Errorf("%v: bars LogY %v, lines LogY %v, want %v", tt.values, b.LogY, l.LogY, tt.log)
		}
	}
}

// TestOneSizeOnLogAxis: a sweep over one size (the REPL's "bench 2^22")
// draws on a log x axis; it once widened the range to reach 0 and panicked.
func TestOneSizeOnLogAxis(t *testing.T) {
	f := Lines{Title: "one size", XLabel: "stride", YLabel: "GB/s", LogX: true,
		Series: []Series{{Name: "read_stride", X: []float64{1}, Y: []float64{2300}}, {Name: "copy", X: []float64{1}, Y: []float64{2887}, Baseline: true}}}
	paths, err := Save(f, t.TempDir(), "one-size")
	if err != nil || len(paths) != 2 {
		t.Fatalf("Save(one size on a log axis) = %v, %v", paths, err)
	}
}

// TestDense: a dense series is drawn as a line alone, without a marker at
// each of its points.
func TestDense(t *testing.T) {
	series := Series{Name: "SM clock"}
	for i := range 200 {
		series.X, series.Y = append(series.X, float64(i)/20), append(series.Y, 1300+float64(i%7))
	}
	fig := Lines{Title: "SM clock under load", XLabel: "time (s)", YLabel: "MHz", Series: []Series{series}}
	marked, err := Encode(fig, "svg")
	if err != nil {
		t.Fatal(err)
	}
	fig.Series[0].Dense = true
	dense, err := Encode(fig, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if len(marked)-len(dense) < 200*20 {
		t.Errorf("dense SVG is %d bytes, with markers %d: want at least 20 bytes less a point", len(dense), len(marked))
	}
}

func TestAxisEnd(t *testing.T) {
	for _, c := range []struct{ v, span, want float64 }{
		{2e-6, 11, 0},
		{11, 11, 11},
		{1024, 7168, 1024},
		{-3e-9, 1, 0},
		{0.5, 0.5, 0.5},
	} {
		if got := axisEnd(c.v, c.span); got != c.want {
			t.Errorf("axisEnd(%g, %g) = %g, want %g", c.v, c.span, got, c.want)
		}
	}
}
