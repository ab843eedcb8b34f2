package plots

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Lines is a figure of one or more series against a common x axis, such as
// throughput against problem size.
type Lines struct {
	Title    string // what and where, e.g. "Vector add bandwidth, NVIDIA H100 80GB HBM3"
	Subtitle string // e.g. "live, 2026-11-22" or "replayed from NVIDIA H100 80GB HBM3, 2026-11-22"
	XLabel   string // with its unit, e.g. "elements (n)"
	YLabel   string // with its unit, e.g. "GB/s"
	LogX     bool
	// LogY asks for a log y axis; it is also set by itself where the
	// values span more than 100×, or where a ceiling stands more than 4×
	// above them (on a linear axis they would lie flat at its foot).
	LogY     bool
	Series   []Series
	Ceilings []Ceiling // horizontal lines across the figure
}

// Series is one line of points.
type Series struct {
	Name     string
	X, Y     []float64
	Baseline bool // a library's result beside kernels': dashed, with hollow markers
	// Dense is a series of many close points, such as readings over time:
	// drawn as a line alone, since markers would cover one another.
	Dense bool
	// Style, if set, is the series' colour and marker, fixed for a set of
	// figures (a lesson's); else its place in the figure decides them.
	Style *Style

	// OutOfMemory marks the sizes that did not fit on the GPU, in the
	// series' colour, so that none can be read as a value: where Y is 0 (a
	// figure of what was measured) a dotted line across the figure at the
	// size, with a cross at its top; where Y > 0 (a memory figure) a cross
	// at what the size would have needed, joined to the series' last point
	// by a dotted line, with the Point's Label beside it.
	OutOfMemory []Point
}

// Point is one x, y pair, and what to write beside it.
type Point struct {
	X, Y  float64
	Label string // e.g. "would need 256 GiB"
}

// Ceiling is a reference drawn as a line across the figure: a measured
// baseline (dashed red), or a limit no result can pass, such as the GPU's
// peak or its memory (dotted black).
type Ceiling struct {
	Name  string // e.g. "device-to-device copy (measured)"
	Value float64
	Peak  bool
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

// yLabel sets p's y axis label to l, in two lines where one would be
// longer than the axis: gonum centres the label on the axis and shrinks
// the axis to fit it, which would leave a gap under the title.
func yLabel(p *plot.Plot, l string) {
	p.Y.Label.Text = l
	if p.Y.Label.TextStyle.Width(l) < height*0.6 {
		return
	}
	mid, cut := len(l)/2, -1
	for i, r := range l {
		if r == ' ' && (cut < 0 || abs(i-mid) < abs(cut-mid)) {
			cut = i
		}
	}
	if cut > 0 {
		p.Y.Label.Text = l[:cut] + "\n" + l[cut+1:]
	}
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
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

// withAxes returns f with a log y axis where its values span more than
// 100×, or where a ceiling stands far above them (logWanted).
func (f Lines) withAxes() Lines {
	var ys, cs []float64
	for _, s := range f.Series {
		ys = append(ys, s.Y...)
	}
	for _, c := range f.Ceilings {
		cs = append(cs, c.Value)
	}
	for _, y := range ys {
		if y <= 0 {
			return f // a log axis cannot show it
		}
	}
	if logWanted(ys, cs) {
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

// Figure is Lines, Bars or a Timeline. Plot returns the gonum plot, with
// its legend inside; Save and Encode draw the legend of Lines and Bars
// below the plot instead, so that it covers no data.
type Figure interface {
	Plot() (*plot.Plot, error)
}

// Size of saved figures, without the legend below them.
const (
	width  = 8 * vg.Inch
	height = 5 * vg.Inch
)

// Save writes f as dir/name.png and dir/name.svg and returns both paths.
func Save(f Figure, dir, name string) ([]string, error) {
	var encoded [][]byte
	for _, ext := range []string{"png", "svg"} {
		b, err := Encode(f, ext)
		if err != nil {
			return nil, err
		}
		encoded = append(encoded, b)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var paths []string
	for i, ext := range []string{"png", "svg"} {
		b := encoded[i]
		path := filepath.Join(dir, name+"."+ext)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return paths, fmt.Errorf("plots: save %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Encode renders f in format "png" or "svg".
func Encode(f Figure, format string) ([]byte, error) {
	c, err := render(f, format)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	return b.Bytes(), nil
}
