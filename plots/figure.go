package plots

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Lines is a figure of one or more series against a common x axis, such as
// throughput against problem size.
type Lines struct {
	Title    string // what and where, e.g. "Vector add bandwidth, NVIDIA H100 80GB HBM3"
	Subtitle string // e.g. "live, 2026-11-22" or "replayed from NVIDIA H100 80GB HBM3, 2026-11-22"
	XLabel   string // with its unit, e.g. "elements (n)"
	YLabel   string // with its unit, e.g. "GB/s"
	LogX     bool
	LogY     bool
	Series   []Series
	Ceilings []Ceiling // dashed horizontal lines
}

// Series is one line of points.
type Series struct {
	Name     string
	X, Y     []float64
	Baseline bool // a library's result rather than a kernel's: dashed, with hollow markers
	// Dense is a series of many close points, such as readings over time:
	// drawn as a line alone, since markers would cover one another.
	Dense bool

	// OutOfMemory marks the sizes that did not fit on the GPU, drawn as
	// crosses in the series' colour: at Y where Y > 0 (a memory figure
	// shows what the size would need), along the x axis where Y is 0.
	OutOfMemory []Point
}

// Point is one x, y pair.
type Point struct{ X, Y float64 }

// Ceiling is a reference drawn as a line across the figure: a measured
// baseline (dashed red), or the GPU's peak (dotted black), which no result
// can pass.
type Ceiling struct {
	Name  string // e.g. "device-to-device copy (measured)"
	Value float64
	Peak  bool
}

// ceilingLine is the style of c's line.
func ceilingLine(c Ceiling) (color.Color, []vg.Length) {
	if c.Peak {
		return color.Black, []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return ceilingRed, []vg.Length{vg.Points(10), vg.Points(4)}
}

// Bars is a figure of one value per group and series, such as each kernel
// version's share of the library's speed.
type Bars struct {
	Title    string
	Subtitle string
	YLabel   string
	LogY     bool     // set by itself where the values span more than 100×, unless Stacked
	Groups   []string // along the x axis
	// Stacked puts a group's series on top of one another, one bar per
	// group whose height is their sum, such as the parts of a time.
	Stacked  bool
	Series   []BarSeries
	Ceilings []Ceiling
}

// BarSeries holds one value per group.
type BarSeries struct {
	Name   string
	Values []float64
}

// palette is colour-blind safe (Okabe–Ito), in the order series use it;
// the red of the ceilings is kept apart from it.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{90, 90, 90, 255},    // grey
	color.RGBA{240, 228, 66, 255},  // yellow
}

var ceilingRed = color.RGBA{180, 30, 30, 255}

// style is how series i of a figure is drawn: its own colour, its own
// marker, and for a library baseline a dash pattern of its own with a
// hollow marker, so that no two series look alike and baselines read as
// baselines.
type style struct {
	colour color.Color
	glyph  draw.GlyphDrawer
	dashes []vg.Length
}

var (
	filledGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}}
	hollowGlyphs = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}}
	dashPatterns = [][]vg.Length{
		{vg.Points(5), vg.Points(3)},
		{vg.Points(1.5), vg.Points(2)},
		{vg.Points(7), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	}
)

// seriesStyle returns the style of the i-th series, the k-th of its kind
// (kernel or baseline).
func seriesStyle(i, k int, baseline bool) style {
	st := style{colour: palette[i%len(palette)], glyph: filledGlyphs[k%len(filledGlyphs)]}
	if baseline {
		st.glyph, st.dashes = hollowGlyphs[k%len(hollowGlyphs)], dashPatterns[k%len(dashPatterns)]
	}
	return st
}

func title(p *plot.Plot, t, sub string) {
	p.Title.Text = t
	if sub != "" {
		p.Title.Text += "\n" + sub
	}
	p.Title.TextStyle.Font.Size = 13
	p.Title.Padding = vg.Points(6)
}

// validate reports a figure that cannot be drawn.
func (f Lines) validate() error {
	points := 0
	for _, s := range f.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plots: %q: series %q has %d x and %d y values", f.Title, s.Name, len(s.X), len(s.Y))
		}
		points += len(s.X)
		for i := range s.X {
			if f.LogX && s.X[i] <= 0 || f.LogY && s.Y[i] <= 0 {
				return fmt.Errorf("plots: %q: series %q has (%g, %g) on a log axis", f.Title, s.Name, s.X[i], s.Y[i])
			}
		}
	}
	if points == 0 {
		return fmt.Errorf("plots: %q has no data", f.Title)
	}
	return nil
}

func (b Bars) validate() error {
	if len(b.Series) == 0 || len(b.Groups) == 0 {
		return fmt.Errorf("plots: %q has no data", b.Title)
	}
	for _, s := range b.Series {
		if len(s.Values) != len(b.Groups) {
			return fmt.Errorf("plots: %q: series %q has %d values for %d groups", b.Title, s.Name, len(s.Values), len(b.Groups))
		}
	}
	return nil
}

// wideSpan is how far apart a figure's values may be, largest over
// smallest, before its y axis turns logarithmic: past it, the small values
// would sit on the axis.
const wideSpan = 100

// spansWide reports whether the positive values vs span more than wideSpan.
func spansWide(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi > 0 && hi/lo > wideSpan
}

// withAxes returns f with a log y axis where its values span more than
// 100×.
func (f Lines) withAxes() Lines {
	var ys []float64
	for _, s := range f.Series {
		ys = append(ys, s.Y...)
	}
	if spansWide(ys) {
		f.LogY = true
	}
	return f
}

// withAxes returns b with a log y axis where its values span more than
// 100×.
func (b Bars) withAxes() Bars {
	if b.Stacked {
		b.LogY = false // a stack's parts add up only on a linear axis
		return b
	}
	var vs []float64
	for _, s := range b.Series {
		vs = append(vs, s.Values...)
	}
	if spansWide(vs) {
		b.LogY = true
	}
	return b
}

// Plot builds the gonum plot of f.
func (f Lines) Plot() (*plot.Plot, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	f = f.withAxes()
	p := plot.New()
	title(p, f.Title, f.Subtitle)
	p.X.Label.Text, p.Y.Label.Text = f.XLabel, f.YLabel
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = powerTicks{}
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), 0.0
	see := func(x, y float64) {
		minX, maxX = math.Min(minX, x), math.Max(maxX, x)
		if y > 0 {
			minY, maxY = math.Min(minY, y), math.Max(maxY, y)
		}
	}
	for _, s := range f.Series {
		for i := range s.X {
			see(s.X[i], s.Y[i])
		}
		for _, o := range s.OutOfMemory {
			see(o.X, o.Y)
		}
	}
	kinds := map[bool]int{}
	oom := false
	var crosses []*plotter.Scatter
	for i, s := range f.Series {
		st := seriesStyle(i, kinds[s.Baseline], s.Baseline)
		kinds[s.Baseline]++
		if len(s.X) > 0 {
			xys := make(plotter.XYs, len(s.X))
			for j := range s.X {
				xys[j].X, xys[j].Y = s.X[j], s.Y[j]
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, fmt.Errorf("plots: %q: series %q: %w", f.Title, s.Name, err)
			}
			line.Color, points.Color = st.colour, st.colour
			line.Width, line.Dashes = vg.Points(1.6), st.dashes
			points.Shape, points.Radius = st.glyph, vg.Points(2.6)
			if s.Dense {
				line.Width = vg.Points(1.2)
				p.Add(line)
				p.Legend.Add(s.Name, line)
			} else {
				p.Add(line, points)
				p.Legend.Add(s.Name, line, points)
			}
		}
		if len(s.OutOfMemory) > 0 {
			oom = true
			xys := make(plotter.XYs, len(s.OutOfMemory))
			for j, o := range s.OutOfMemory {
				xys[j].X, xys[j].Y = o.X, o.Y
			}
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("plots: %q: series %q: %w", f.Title, s.Name, err)
			}
			sc.Shape, sc.Color, sc.Radius = draw.CrossGlyph{}, st.colour, vg.Points(4.5)
			crosses = append(crosses, sc)
			if len(s.X) == 0 {
				p.Legend.Add(s.Name+" (none fit)", sc)
			}
		}
	}
	if minY > maxY { // only crosses on the axis: no scale to speak of
		minY, maxY = 1, 1
	}
	if f.LogX && minX == maxX && minX > 0 {
		// One x value (a sweep over one size): gonum would widen the
		// range by ±1, which on a log axis can reach 0 and panic.
		p.X.Min, p.X.Max = minX/2, maxX*2
	}
	// Crosses with no y sit just above the x axis.
	bottom := 0.02 * maxY
	if f.LogY {
		bottom = minY / 2
		p.Y.Min = bottom
	}
	for _, sc := range crosses {
		for j := range sc.XYs {
			if sc.XYs[j].Y <= 0 {
				sc.XYs[j].Y = bottom
			}
		}
		p.Add(sc)
	}
	for _, c := range f.Ceilings {
		xys := plotter.XYs{{X: minX, Y: c.Value}, {X: maxX, Y: c.Value}}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.Color, line.Dashes = ceilingLine(c)
		line.Width = vg.Points(1.2)
		p.Add(line)
		p.Legend.Add(c.Name, line)
		maxY = math.Max(maxY, c.Value)
	}
	entries := len(f.Series) + len(f.Ceilings)
	if oom {
		mark, _ := plotter.NewScatter(plotter.XYs{{}})
		mark.Shape, mark.Color, mark.Radius = draw.CrossGlyph{}, color.Black, vg.Points(4.5)
		p.Legend.Add("out of memory: the size did not fit", mark)
		entries++
	}
	legendRoom(p, f.LogY, maxY, entries)
	return p, nil
}

// legendRoom puts the legend top left and raises the y axis so that the
// legend sits above the data instead of over it.
func legendRoom(p *plot.Plot, logY bool, maxY float64, entries int) {
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = 9
	p.Legend.Padding = vg.Points(2)
	p.Legend.XOffs = vg.Points(6)
	if maxY <= 0 {
		return
	}
	room := 1.12 + 0.07*float64(entries)
	if logY {
		p.Y.Max = maxY * math.Pow(10, 0.35*float64(entries))
		return
	}
	p.Y.Min = 0
	p.Y.Max = maxY * room
}

// powerTicks labels a log axis at powers of two, which is how sizes are
// chosen here; it falls back to gonum's powers of ten over wide ranges.
type powerTicks struct{}

// Ticks returns the tick marks of [min, max].
func (powerTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(math.Log2(min)), math.Floor(math.Log2(max))
	if hi-lo > 24 || hi < lo {
		return plot.LogTicks{Prec: -1}.Ticks(min, max)
	}
	step := math.Max(1, math.Ceil((hi-lo)/8))
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		t := plot.Tick{Value: math.Pow(2, e)}
		if math.Mod(e-lo, step) == 0 {
			t.Label = powerLabel(e, hi)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// powerLabel writes 2^e plainly when the axis ends at 2^13 or below, and as
// "2^e" on axes that reach further, so that one axis uses one style.
func powerLabel(e, top float64) string {
	if top <= 13 && e >= 0 {
		return fmt.Sprintf("%d", int(math.Pow(2, e)))
	}
	return fmt.Sprintf("2^%d", int(e))
}

// Plot builds the gonum plot of b: grouped bars, one colour per series,
// each labelled with its value, on a log axis where the values span more
// than 100×.
func (b Bars) Plot() (*plot.Plot, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	b = b.withAxes()
	p := plot.New()
	title(p, b.Title, b.Subtitle)
	p.Y.Label.Text = b.YLabel
	minV, maxY := math.Inf(1), 0.0
	for _, s := range b.Series {
		for _, v := range s.Values {
			if v > 0 {
				minV = math.Min(minV, v)
			}
			maxY = math.Max(maxY, v)
		}
	}
	if b.Stacked {
		return b.stackedPlot(p)
	}
	base := 0.0
	if b.LogY {
		base = minV / 3
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min = base
	}
	p.Add(plotter.NewGrid())
	width := vg.Points(math.Min(70, 420/float64(len(b.Groups)*len(b.Series))))
	for i, s := range b.Series {
		bars := &barPlotter{values: s.Values, base: base, width: width, colour: palette[i%len(palette)],
			offset: width * vg.Length(float64(i)-float64(len(b.Series)-1)/2)}
		p.Add(bars)
		if len(b.Series) > 1 {
			p.Legend.Add(s.Name, bars)
		}
	}
	maxY, err := b.ceilingsAndGroups(p, maxY)
	if err != nil {
		return nil, err
	}
	legendRoom(p, b.LogY, maxY, len(b.Series)+len(b.Ceilings))
	if b.LogY {
		p.Y.Min = base
	}
	return p, nil
}

// stackedPlot draws b's series stacked, a bar per group with its total
// written above it.
func (b Bars) stackedPlot(p *plot.Plot) (*plot.Plot, error) {
	p.Add(plotter.NewGrid())
	width := vg.Points(math.Min(90, 480/float64(len(b.Groups))))
	bottoms := make([]float64, len(b.Groups))
	maxY := 0.0
	for i, s := range b.Series {
		bars := &barPlotter{values: s.Values, bottoms: append([]float64{}, bottoms...), width: width, colour: palette[i%len(palette)]}
		for g, v := range s.Values {
			bottoms[g] += v
			maxY = math.Max(maxY, bottoms[g])
		}
		if i == len(b.Series)-1 {
			bars.totals = bottoms
		}
		p.Add(bars)
		p.Legend.Add(s.Name, bars)
	}
	maxY, err := b.ceilingsAndGroups(p, maxY)
	if err != nil {
		return nil, err
	}
	legendRoom(p, false, maxY, len(b.Series)+len(b.Ceilings))
	return p, nil
}

// ceilingsAndGroups draws b's ceilings across the plot and names the
// groups along the x axis; it returns maxY raised to the highest ceiling.
func (b Bars) ceilingsAndGroups(p *plot.Plot, maxY float64) (float64, error) {
	for _, c := range b.Ceilings {
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: c.Value}, {X: float64(len(b.Groups)) - 0.5, Y: c.Value}})
		if err != nil {
			return 0, err
		}
		line.Color, line.Dashes = ceilingLine(c)
		p.Add(line)
		p.Legend.Add(c.Name, line)
		maxY = math.Max(maxY, c.Value)
	}
	p.NominalX(b.Groups...)
	if len(b.Groups) > 4 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
	}
	return maxY, nil
}

// barPlotter draws one series of bars from base up to each value, with the
// value written above: gonum's BarChart starts its bars at zero, which a
// log axis cannot show.
type barPlotter struct {
	values []float64
	base   float64
	// Stacked: each bar starts at its group's bottom, and the top series
	// writes the groups' totals instead of its own values.
	bottoms []float64
	totals  []float64
	width   vg.Length
	offset  vg.Length
	colour  color.Color
}

// Plot draws the bars on c.
func (b *barPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	font := plot.DefaultFont
	font.Size = vg.Points(8)
	label := draw.TextStyle{Color: color.Black, Font: font, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter}
	for i, v := range b.values {
		lo, hi := b.base, v
		if b.bottoms != nil {
			lo, hi = b.bottoms[i], b.bottoms[i]+v
		}
		x := trX(float64(i)) + b.offset
		if hi > lo {
			y0, y1 := trY(lo), trY(hi)
			c.FillPolygon(b.colour, c.ClipPolygonY([]vg.Point{
				{X: x - b.width/2, Y: y0}, {X: x - b.width/2, Y: y1}, {X: x + b.width/2, Y: y1}, {X: x + b.width/2, Y: y0},
			}))
		}
		switch {
		case b.totals != nil:
			c.FillText(label, vg.Point{X: x, Y: trY(b.totals[i]) + vg.Points(2)}, barValue(b.totals[i]))
		case b.bottoms == nil && hi > lo:
			c.FillText(label, vg.Point{X: x, Y: trY(hi) + vg.Points(2)}, barValue(v))
		}
	}
}

// DataRange is the bars' extent, so that the axes take them in.
func (b *barPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = b.base, b.base
	for i, v := range b.values {
		if b.bottoms != nil {
			v += b.bottoms[i]
		}
		ymax = math.Max(ymax, v)
	}
	return -0.5, float64(len(b.values)) - 0.5, ymin, ymax
}

// Thumbnail draws the legend's swatch.
func (b *barPlotter) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.colour, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}})
}

// barValue writes a bar's value with three significant digits.
func barValue(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// Figure is Lines, Bars or a Timeline.
type Figure interface {
	Plot() (*plot.Plot, error)
}

// Size of saved figures.
const (
	width  = 8 * vg.Inch
	height = 5 * vg.Inch
)

// Save writes f as dir/name.png and dir/name.svg and returns both paths.
func Save(f Figure, dir, name string) ([]string, error) {
	p, err := f.Plot()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var paths []string
	for _, ext := range []string{".png", ".svg"} {
		path := filepath.Join(dir, name+ext)
		if err := p.Save(width, height, path); err != nil {
			return paths, fmt.Errorf("plots: save %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Encode renders f in format "png" or "svg".
func Encode(f Figure, format string) ([]byte, error) {
	p, err := f.Plot()
	if err != nil {
		return nil, err
	}
	w, err := p.WriterTo(width, height, format)
	if err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var sb strings.Builder
	if _, err := w.WriteTo(&sb); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	return []byte(sb.String()), nil
}
