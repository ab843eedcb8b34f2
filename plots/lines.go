package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot builds the gonum plot of f, its legend inside, top left.
func (f Lines) Plot() (*plot.Plot, error) {
	d, err := f.build()
	if err != nil {
		return nil, err
	}
	return legendInside(d), nil
}

// extent is the range of what a figure of lines draws: its x values, and
// its positive y values (points, crosses at a need, ceilings).
type extent struct{ minX, maxX, minY, maxY float64 }

func (e *extent) x(x float64) { e.minX, e.maxX = math.Min(e.minX, x), math.Max(e.maxX, x) }

func (e *extent) y(y float64) {
	if y > 0 {
		e.minY, e.maxY = math.Min(e.minY, y), math.Max(e.maxY, y)
	}
}

// extentOf is what f draws.
func extentOf(f Lines) extent {
	e := extent{math.Inf(1), math.Inf(-1), math.Inf(1), 0}
	for _, s := range f.Series {
		for i := range s.X {
			e.x(s.X[i])
			e.y(s.Y[i])
		}
		for _, o := range s.OutOfMemory {
			e.x(o.X)
			e.y(o.Y)
		}
	}
	for _, c := range f.Ceilings {
		e.y(c.Value)
	}
	if e.minY > e.maxY { // nothing with a y: no scale to speak of
		e.minY, e.maxY = 1, 1
	}
	return e
}

// build draws f: its series, the sizes out of memory, the ceilings, and the
// legend's entries, on axes that end near the data.
func (f Lines) build() (drawing, error) {
	if err := f.validate(); err != nil {
		return drawing{}, err
	}
	f = f.withAxes()
	p := plot.New()
	title(p, f.Title, f.Subtitle)
	p.X.Label.Text = f.XLabel
	yLabel(p, f.YLabel)
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	if f.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, powerTicks{}
	}
	if f.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	p.Add(plotter.NewGrid())
	var legend []entry
	lks := looks(f.Series)
	refused := map[float64]int{} // series out of memory at each size so far
	var measuredOOM, neededOOM bool
	for i, s := range f.Series {
		lk := lks[i]
		if len(s.X) > 0 {
			e, err := addSeries(p, s, lk)
			if err != nil {
				return drawing{}, fmt.Errorf("plots: %q: series %q: %w", f.Title, s.Name, err)
			}
			legend = append(legend, e)
		}
		if len(s.OutOfMemory) == 0 {
			continue
		}
		measured, needed, err := addOutOfMemory(p, s, lk.colour, refused)
		if err != nil {
			return drawing{}, fmt.Errorf("plots: %q: series %q: %w", f.Title, s.Name, err)
		}
		measuredOOM, neededOOM = measuredOOM || measured, neededOOM || needed
		if len(s.X) == 0 {
			legend = append(legend, entry{s.Name + " (no size fit)", []plot.Thumbnailer{crossThumb{lk.colour, false}}})
		}
	}
	ext := extentOf(f)
	for _, c := range f.Ceilings {
		line, err := plotter.NewLine(plotter.XYs{{X: ext.minX, Y: c.Value}, {X: ext.maxX, Y: c.Value}})
		if err != nil {
			return drawing{}, err
		}
		line.Color, line.Dashes = ceilingLine(c)
		line.Width = vg.Points(1.2)
		p.Add(line)
		legend = append(legend, entry{c.Name, []plot.Thumbnailer{line}})
		if len(f.Ceilings) > 1 {
			// Lines drawn alike are told apart by name where they run.
			if err := labelCeiling(p, c, ext.minX); err != nil {
				return drawing{}, err
			}
		}
	}
	if measuredOOM {
		legend = append(legend, entry{"out of memory at this size: nothing measured", []plot.Thumbnailer{crossThumb{color.Black, true}}})
	}
	if neededOOM {
		legend = append(legend, entry{"out of memory: what the size would need", []plot.Thumbnailer{crossThumb{color.Black, false}}})
	}
	setRanges(p, f, ext, measuredOOM || neededOOM)
	return drawing{p, legend}, nil
}

// addSeries draws s in look lk and returns its legend entry.
func addSeries(p *plot.Plot, s Series, lk look) (entry, error) {
	xys := make(plotter.XYs, len(s.X))
	for j := range s.X {
		xys[j].X, xys[j].Y = s.X[j], s.Y[j]
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return entry{}, err
	}
	line.Color, points.Color = lk.colour, lk.colour
	line.Width, line.Dashes = vg.Points(1.6), lk.dashes
	points.Shape, points.Radius = lk.glyph, vg.Points(3)
	if s.Dense {
		line.Width = vg.Points(1.2)
		p.Add(line)
		return entry{s.Name, []plot.Thumbnailer{line}}, nil
	}
	p.Add(line, points)
	return entry{s.Name, []plot.Thumbnailer{line, points}}, nil
}

// addOutOfMemory draws s's sizes out of memory in its colour: where
// nothing was measured (refused counts the series marked at each such size
// so far, to stack their crosses), and at what a size would need. It
// reports which kinds it drew.
func addOutOfMemory(p *plot.Plot, s Series, colour color.Color, refused map[float64]int) (measured, needed bool, err error) {
	var marks refusals
	for _, o := range s.OutOfMemory {
		if o.Y > 0 {
			needed = true
			if err := addNeed(p, s, o, colour); err != nil {
				return measured, needed, err
			}
			continue
		}
		measured = true
		marks = append(marks, refusal{x: o.X, slot: refused[o.X], colour: colour})
		refused[o.X]++
	}
	if len(marks) > 0 {
		p.Add(marks)
	}
	return measured, needed, nil
}

// addNeed draws o, a size of s that did not fit, at what it would need: a
// cross in s's colour, a dotted line to it from s's last point, and o's
// label to its left.
func addNeed(p *plot.Plot, s Series, o Point, colour color.Color) error {
	if n := len(s.X); n > 0 {
		join, err := plotter.NewLine(plotter.XYs{{X: s.X[n-1], Y: s.Y[n-1]}, {X: o.X, Y: o.Y}})
		if err != nil {
			return err
		}
		join.Color, join.Width, join.Dashes = colour, vg.Points(1), []vg.Length{vg.Points(1), vg.Points(3)}
		p.Add(join)
	}
	sc, err := plotter.NewScatter(plotter.XYs{{X: o.X, Y: o.Y}})
	if err != nil {
		return err
	}
	sc.Shape, sc.Color, sc.Radius = draw.CrossGlyph{}, colour, vg.Points(5)
	p.Add(sc)
	if o.Label != "" {
		p.Add(canvasFunc(func(c draw.Canvas, p *plot.Plot) {
			trX, trY := p.Transforms(&c)
			sty := legendText()
			// Above and left of the cross: the dotted line comes from below.
			sty.Font.Size, sty.Color, sty.XAlign, sty.YAlign = vg.Points(9), colour, draw.XRight, draw.YBottom
			c.FillText(sty, vg.Point{X: trX(o.X) - vg.Points(4), Y: trY(o.Y) + vg.Points(4)}, o.Label)
		}))
	}
	return nil
}

// setRanges ends f's axes near what it draws (ext): a log y axis a little
// beyond the smallest and the largest value, a linear one from 0 to a
// little above the largest, with more room at the top for the crosses of
// sizes out of memory (at the top, or at their need with its label).
func setRanges(p *plot.Plot, f Lines, ext extent, crossesAtTop bool) {
	p.X.Min, p.X.Max = ext.minX, ext.maxX
	if f.LogX && ext.minX == ext.maxX {
		// One x value (a sweep over one size): gonum would widen the
		// range by ±1, which on a log axis can reach 0 and panic.
		p.X.Min, p.X.Max = ext.minX/2, ext.maxX*2
	}
	pad, linear := logPad, linPad
	if crossesAtTop {
		pad, linear = logPad*logPad, 3*linPad
	}
	if f.LogY {
		p.Y.Min, p.Y.Max = ext.minY/logPad, ext.maxY*pad
		return
	}
	p.Y.Min, p.Y.Max = 0, ext.maxY*(1+linear)
}

// refusal is a size where a series ran out of memory in a figure of what
// was measured: slot is its place from the top where several series ran
// out at one size.
type refusal struct {
	x      float64
	slot   int
	colour color.Color
}

// refusals draws each as a dotted line across the figure, with a cross at
// its top: nothing was measured there, and nothing on the line is a value.
type refusals []refusal

// Plot draws the refusals on c.
func (rs refusals) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, r := range rs {
		x := trX(r.x)
		c.StrokeLine2(draw.LineStyle{Color: r.colour, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(1), vg.Points(3)}},
			x, c.Min.Y, x, c.Max.Y)
		top := vg.Point{X: x, Y: c.Max.Y - vg.Points(6) - vg.Points(11)*vg.Length(r.slot)}
		c.DrawGlyph(draw.GlyphStyle{Color: r.colour, Radius: vg.Points(4.5), Shape: draw.CrossGlyph{}}, top)
	}
}

// crossThumb is the legend's swatch of a size out of memory: a cross, on a
// dotted line where line is set.
type crossThumb struct {
	colour color.Color
	line   bool
}

// Thumbnail draws the swatch.
func (t crossThumb) Thumbnail(c *draw.Canvas) {
	mid := c.Center()
	if t.line {
		c.StrokeLine2(draw.LineStyle{Color: t.colour, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(1), vg.Points(3)}},
			mid.X, c.Min.Y, mid.X, c.Max.Y)
	}
	c.DrawGlyph(draw.GlyphStyle{Color: t.colour, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}, mid)
}

// canvasFunc is a plotter that draws by calling itself.
type canvasFunc func(c draw.Canvas, p *plot.Plot)

// Plot draws on c.
func (f canvasFunc) Plot(c draw.Canvas, p *plot.Plot) { f(c, p) }

// labelCeiling writes c's short name (its name up to the first comma) just
// above its line at x, the figure's left end: several ceilings drawn in
// one style (a peak in each precision) are told apart where they run, not
// only in the legend.
func labelCeiling(p *plot.Plot, c Ceiling, x float64) error {
	name, _, _ := strings.Cut(c.Name, ",")
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: c.Value}}, Labels: []string{name}})
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Font.Size = vg.Points(8)
		labels.TextStyle[i].Color = color.Gray{Y: 60}
		labels.TextStyle[i].YAlign = draw.YBottom
	}
	labels.Offset = vg.Point{X: vg.Points(3), Y: vg.Points(1)}
	p.Add(labels)
	return nil
}
