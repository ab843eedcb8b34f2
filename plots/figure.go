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
	Baseline bool // a library's result rather than a kernel's: drawn grey
}

// Ceiling is a measured limit, drawn as a dashed line across the figure.
type Ceiling struct {
	Name  string // e.g. "device-to-device copy (measured)"
	Value float64
}

// Bars is a figure of one value per group and series, such as each kernel
// version's share of the library's speed.
type Bars struct {
	Title    string
	Subtitle string
	YLabel   string
	Groups   []string // along the x axis
	Series   []BarSeries
	Ceilings []Ceiling
}

// BarSeries holds one value per group.
type BarSeries struct {
	Name   string
	Values []float64
}

// palette is colour-blind safe (Okabe–Ito), in the order series use it.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{240, 228, 66, 255},  // yellow
}

var (
	grey       = color.RGBA{110, 110, 110, 255}
	ceilingRed = color.RGBA{180, 30, 30, 255}
)

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
	if len(f.Series) == 0 {
		return fmt.Errorf("plots: %q has no data", f.Title)
	}
	for _, s := range f.Series {
		if len(s.X) != len(s.Y) || len(s.X) == 0 {
			return fmt.Errorf("plots: %q: series %q has %d x and %d y values", f.Title, s.Name, len(s.X), len(s.Y))
		}
		for i := range s.X {
			if f.LogX && s.X[i] <= 0 || f.LogY && s.Y[i] <= 0 {
				return fmt.Errorf("plots: %q: series %q has (%g, %g) on a log axis", f.Title, s.Name, s.X[i], s.Y[i])
			}
		}
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

// Plot builds the gonum plot of f.
func (f Lines) Plot() (*plot.Plot, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
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
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	colour := 0
	for _, s := range f.Series {
		xys := make(plotter.XYs, len(s.X))
		for i := range s.X {
			xys[i].X, xys[i].Y = s.X[i], s.Y[i]
			minX, maxX, maxY = math.Min(minX, s.X[i]), math.Max(maxX, s.X[i]), math.Max(maxY, s.Y[i])
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("plots: %q: series %q: %w", f.Title, s.Name, err)
		}
		var c color.Color = grey
		if !s.Baseline {
			c = palette[colour%len(palette)]
			colour++
		}
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.6)
		points.Shape = draw.CircleGlyph{}
		points.Radius = vg.Points(2.2)
		if s.Baseline {
			line.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
			points.Shape = draw.BoxGlyph{}
		}
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
	}
	for _, c := range f.Ceilings {
		xys := plotter.XYs{{X: minX, Y: c.Value}, {X: maxX, Y: c.Value}}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.Color = ceilingRed
		line.Width = vg.Points(1.2)
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(line)
		p.Legend.Add(c.Name, line)
		maxY = math.Max(maxY, c.Value)
	}
	legendRoom(p, f.LogY, maxY, len(f.Series)+len(f.Ceilings))
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

// Plot builds the gonum plot of b: grouped bars, one colour per series.
func (b Bars) Plot() (*plot.Plot, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	p := plot.New()
	title(p, b.Title, b.Subtitle)
	p.Y.Label.Text = b.YLabel
	p.Add(plotter.NewGrid())
	width := vg.Points(math.Min(70, 420/float64(len(b.Groups)*len(b.Series))))
	maxY := 0.0
	for i, s := range b.Series {
		bars, err := plotter.NewBarChart(plotter.Values(s.Values), width)
		if err != nil {
			return nil, fmt.Errorf("plots: %q: %w", b.Title, err)
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(b.Series)-1)/2)
		p.Add(bars)
		if len(b.Series) > 1 {
			p.Legend.Add(s.Name, bars)
		}
		for _, v := range s.Values {
			maxY = math.Max(maxY, v)
		}
	}
	for _, c := range b.Ceilings {
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: c.Value}, {X: float64(len(b.Groups)) - 0.5, Y: c.Value}})
		if err != nil {
			return nil, err
		}
		line.Color = ceilingRed
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(line)
		p.Legend.Add(c.Name, line)
		maxY = math.Max(maxY, c.Value)
	}
	p.NominalX(b.Groups...)
	if len(b.Groups) > 4 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
	}
	legendRoom(p, false, maxY, len(b.Series)+len(b.Ceilings))
	return p, nil
}

// Figure is either Lines or Bars.
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
