package plots

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
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

// TestSeriesStylesDiffer: no two of the first eight series of a figure,
// kernels and baselines mixed, are drawn alike, every baseline is dashed
// with a hollow marker, and the terminal's markers differ too.
func TestSeriesStylesDiffer(t *testing.T) {
	var series []Series
	for i := range Styles {
		series = append(series, Series{Name: fmt.Sprint(i), Baseline: i%2 == 1})
	}
	seen, marks := map[string]int{}, map[rune]int{}
	for i, lk := range looks(series) {
		key := fmt.Sprintf("%v %v", lk.colour, lk.glyph)
		if j, dup := seen[key]; dup {
			t.Errorf("series %d is drawn like series %d: %s", i, j, key)
		}
		seen[key] = i
		if j, dup := marks[lk.marker]; dup {
			t.Errorf("series %d has series %d's terminal marker %c", i, j, lk.marker)
		}
		marks[lk.marker] = i
		if baseline := series[i].Baseline; baseline != (len(lk.dashes) > 0) || baseline != lk.glyph.(shape).hollow {
			t.Errorf("series %d: baseline %v, dashes %v, glyph %+v", i, baseline, lk.dashes, lk.glyph)
		}
	}
}

// TestStylesKeptAcrossFigures: a series given a Style keeps its colour and
// marker whatever else its figure holds, and a series without one takes a
// colour and a marker no styled series of the figure has.
func TestStylesKeptAcrossFigures(t *testing.T) {
	v2 := Series{Name: "v2", Style: &Style{Colour: 1, Marker: 1}}
	alone := looks([]Series{v2})[0]
	beside := looks([]Series{{Name: "v1", Style: &Style{}}, v2, {Name: "lib", Baseline: true, Style: &Style{Colour: 6, Marker: 6}}})[1]
	if alone.colour != beside.colour || alone.marker != beside.marker {
		t.Errorf("v2 alone: %v %c; beside others: %v %c", alone.colour, alone.marker, beside.colour, beside.marker)
	}
	mixed := looks([]Series{{Name: "yours"}, v2})
	if mixed[0].colour == mixed[1].colour || mixed[0].marker == mixed[1].marker {
		t.Errorf("an unstyled series took v2's look: %v %c", mixed[0].colour, mixed[0].marker)
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

// TestLogAxisForFarCeiling: a ceiling far above the values (lesson 13's
// chain at 60 TFLOP/s under a 989 peak) turns the y axis logarithmic, so
// the values do not lie flat at its foot; one close above does not.
func TestLogAxisForFarCeiling(t *testing.T) {
	for _, tc := range []struct {
		peak float64
		log  bool
	}{{989, true}, {3350, true}, {300, false}, {120, false}} {
		l := Lines{Series: []Series{{X: []float64{1, 2}, Y: []float64{60, 90}}}, Ceilings: []Ceiling{{Value: tc.peak, Peak: true}}}.withAxes()
		if l.LogY != tc.log {
			t.Errorf("values 60 and 90 under a ceiling at %g: LogY %v, want %v", tc.peak, l.LogY, tc.log)
		}
	}
}

// TestAxesNearTheData: a y axis ends a little beyond what the figure
// draws, not decades above it to make room for the legend, which is drawn
// below the plot.
func TestAxesNearTheData(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fig    Lines
		lo, hi float64 // what it draws
	}{
		{"linear", sample(), 0, 2990},
		{"log", sampleWide(), 2, 2990},
		{"log, a far ceiling", Lines{Title: "chain", LogX: true, Series: []Series{{Name: "chain", X: []float64{512, 1024}, Y: []float64{55, 90}}},
			Ceilings: []Ceiling{{Name: "peak", Value: 989, Peak: true}}}, 55, 989},
	} {
		d, err := tc.fig.build()
		if err != nil {
			t.Fatal(err)
		}
		if d.p.Y.Max < tc.hi || d.p.Y.Max > 2*tc.hi || d.p.Y.Min > tc.lo || tc.lo > 0 && d.p.Y.Min < tc.lo/2 {
			t.Errorf("%s: y axis %g to %g, want it just around %g to %g", tc.name, d.p.Y.Min, d.p.Y.Max, tc.lo, tc.hi)
		}
		if len(d.legend) != len(tc.fig.Series)+len(tc.fig.Ceilings)+map[bool]int{true: 1}[tc.name == "log"] {
			t.Errorf("%s: %d legend entries", tc.name, len(d.legend))
		}
	}
	svg, err := Encode(sample(), "svg")
	if err != nil {
		t.Fatal(err)
	}
	attr := regexp.MustCompile(`height="([0-9.]+)pt"`).FindSubmatch(svg)
	h, err := strconv.ParseFloat(string(attr[1]), 64)
	if err != nil || h <= 360 || h > 400 {
		t.Errorf("the figure is %gpt high (%v), want 5 inches (360pt) and its legend's rows below", h, err)
	}
}

// TestTicks: axis labels are round values written plainly ("2500", not
// "2500.00"; "0.5"; "1e7" past a million), and a log axis kept near its
// data still has labels between its powers of ten.
func TestTicks(t *testing.T) {
	labels := func(ticks []plot.Tick) string {
		var ls []string
		for _, tk := range ticks {
			if tk.Label != "" {
				ls = append(ls, tk.Label)
			}
		}
		return strings.Join(ls, " ")
	}
	for _, tc := range []struct {
		name  string
		ticks []plot.Tick
		want  string
	}{
		{"linear to 5300", linearTicks{}.Ticks(0, 5300), "0 1000 2000 3000 4000 5000"},
		{"linear to 1.1", linearTicks{}.Ticks(0, 1.1), "0 0.2 0.4 0.6 0.8 1"},
		{"log over 1.3 decades", logTicks{}.Ticks(42, 1290), "50 100 200 500 1000"},
		{"log over 4 decades", logTicks{}.Ticks(2.6, 4400), "10 100 1000"},
		{"log to 1e7", logTicks{}.Ticks(3, 3e7), "10 100 1000 10000 100000 1e6 1e7"},
	} {
		if got := labels(tc.ticks); got != tc.want {
			t.Errorf("%s: labels %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTerminalMarks: in a terminal chart a measured baseline is dashed (╌)
// and a peak dotted (┈), as in the figures and the lessons' prose; a log
// axis says so; two series at one point show as *, not one hiding the
// other; and a size out of memory is a × above the chart and a column of
// ┊, never a point on the x axis.
func TestTerminalMarks(t *testing.T) {
	var b bytes.Buffer
	f := sampleWide()
	f.Ceilings = append(f.Ceilings, Ceiling{Name: "DRAM peak", Value: 3350, Peak: true})
	if err := Terminal(&b, f, 72); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"╌ device-to-device copy", "┈ DRAM peak", "GB/s, log scale", "elements (n), log scale",
		"* two or more series at one point", "┊× out of memory at this size: nothing measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("the chart lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	if !strings.HasSuffix(lines[3], "×") || strings.Contains(lines[3], "┤") {
		t.Errorf("the × is not in a row of its own above the chart: %q\n%s", lines[3], out)
	}
	for _, l := range lines {
		if strings.Contains(l, "┤") && strings.Contains(l, "×") {
			t.Errorf("a × inside the chart, where it reads as a value: %q", l)
		}
	}
}

// TestLegendColumns: the legend below a figure is laid out in as many
// columns of one width as fit, up to 3.
func TestLegendColumns(t *testing.T) {
	named := func(name string) entry { return entry{name: name} }
	for _, tc := range []struct {
		entries []entry
		cols    int
	}{
		{[]entry{named("v1"), named("v2"), named("v3"), named("v4")}, 3},
		{[]entry{named("v1"), named("DRAM bandwidth, 3350 GB/s (NVIDIA's figure)")}, 2},
		{[]entry{named(strings.Repeat("a very long name ", 20))}, 1},
	} {
		cols, rows := legendLayout(tc.entries, width-vg.Inch)
		if len(cols) != tc.cols || rows != (len(tc.entries)+tc.cols-1)/tc.cols {
			t.Errorf("%d entries: %d columns, %d rows; want %d columns", len(tc.entries), len(cols), rows, tc.cols)
		}
	}
}

// TestCeilingsNamedWhereTheyRun: where a figure has several ceilings,
// drawn alike, each is named at its line as well as in the legend; a lone
// one only in the legend.
func TestCeilingsNamedWhereTheyRun(t *testing.T) {
	for _, c := range []struct {
		ceilings []Ceiling
		want     int // times "FP16 peak" is written
	}{
		{[]Ceiling{{Name: "FP16 peak, 989", Value: 989, Peak: true}}, 1},
		{[]Ceiling{{Name: "FP32 peak, 67", Value: 67, Peak: true}, {Name: "FP16 peak, 989", Value: 989, Peak: true}}, 2},
	} {
		p, err := Lines{Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{10, 20}}}, Ceilings: c.ceilings}.Plot()
		if err != nil {
			t.Fatal(err)
		}
		w, err := p.WriterTo(4*vg.Inch, 3*vg.Inch, "svg")
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(b.String(), "FP16 peak"); got != c.want {
			t.Errorf("%d ceilings: \"FP16 peak\" written %d times, want %d", len(c.ceilings), got, c.want)
		}
	}
}
