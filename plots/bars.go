package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot builds the gonum plot of b, its legend inside, top left.
func (b Bars) Plot() (*plot.Plot, error) {
	d, err := b.build()
	if err != nil {
		return nil, err
	}
	return legendInside(d), nil
}

// build draws b: grouped bars, one colour per series, each labelled with
// its value, on a log axis where the values span more than 100×; the
// legend names the series (where there are several) and the ceilings.
func (b Bars) build() (drawing, error) {
	if err := b.validate(); err != nil {
		return drawing{}, err
	}
	b = b.withAxes()
	p := plot.New()
	title(p, b.Title, b.Subtitle)
	yLabel(p, b.YLabel)
	p.Y.Tick.Marker = linearTicks{}
	if b.Stacked {
		return b.stacked(p)
	}
	minV, maxY := math.Inf(1), 0.0
	for _, s := range b.Series {
		for _, v := range s.Values {
			if v > 0 {
				minV = math.Min(minV, v)
			}
			maxY = math.Max(maxY, v)
		}
	}
	base := 0.0
	if b.LogY {
		base = minV / 3
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	p.Add(plotter.NewGrid())
	var legend []entry
	width := vg.Points(math.Min(70, 420/float64(len(b.Groups)*len(b.Series))))
	for i, s := range b.Series {
		bars := &barPlotter{values: s.Values, base: base, width: width, colour: palette[i%len(palette)],
			offset: width * vg.Length(float64(i)-float64(len(b.Series)-1)/2)}
		p.Add(bars)
		if len(b.Series) > 1 {
			legend = append(legend, entry{s.Name, []plot.Thumbnailer{bars}})
		}
	}
	maxY, ceilings, err := b.ceilingsAndGroups(p, maxY)
	if err != nil {
		return drawing{}, err
	}
	// Room above the tallest bar for its value, and no more.
	p.Y.Min, p.Y.Max = base, maxY*1.1
	if b.LogY {
		p.Y.Max = maxY * 1.6
	}
	return drawing{p, append(legend, ceilings...)}, nil
}

// stacked draws b's series stacked, a bar per group with its total
// written above it.
func (b Bars) stacked(p *plot.Plot) (drawing, error) {
	p.Add(plotter.NewGrid())
	width := vg.Points(math.Min(90, 480/float64(len(b.Groups))))
	bottoms := make([]float64, len(b.Groups))
	maxY := 0.0
	var legend []entry
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
		legend = append(legend, entry{s.Name, []plot.Thumbnailer{bars}})
	}
	maxY, ceilings, err := b.ceilingsAndGroups(p, maxY)
	if err != nil {
		return drawing{}, err
	}
	p.Y.Min, p.Y.Max = 0, maxY*1.1
	return drawing{p, append(legend, ceilings...)}, nil
}

// ceilingsAndGroups draws b's ceilings across the plot and names the
// groups along the x axis; it returns maxY raised to the highest ceiling,
// and the ceilings' legend entries.
func (b Bars) ceilingsAndGroups(p *plot.Plot, maxY float64) (float64, []entry, error) {
	var legend []entry
	for _, c := range b.Ceilings {
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: c.Value}, {X: float64(len(b.Groups)) - 0.5, Y: c.Value}})
		if err != nil {
			return 0, nil, err
		}
		line.Color, line.Dashes = ceilingLine(c)
		line.Width = vg.Points(1.2)
		p.Add(line)
		legend = append(legend, entry{c.Name, []plot.Thumbnailer{line}})
		maxY = math.Max(maxY, c.Value)
	}
	p.NominalX(b.Groups...)
	if len(b.Groups) > 4 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
	}
	return maxY, legend, nil
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
