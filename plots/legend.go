package plots

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// entry is one line of a figure's legend: a name and what its series or
// line looks like.
type entry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// drawing is a figure ready to draw: the plot, and its legend, which Save
// and Encode draw below the plot, outside the data, so that the axes need
// no room for it.
type drawing struct {
	p      *plot.Plot
	legend []entry
}

// builder is a figure that draws its legend below its plot.
type builder interface {
	build() (drawing, error)
}

// legendInside returns d's plot with the legend drawn inside it, top left:
// what Plot returns, for a caller that draws the plot itself.
func legendInside(d drawing) *plot.Plot {
	d.p.Legend.Top, d.p.Legend.Left = true, true
	d.p.Legend.TextStyle.Font.Size = 9
	d.p.Legend.XOffs = vg.Points(6)
	for _, e := range d.legend {
		d.p.Legend.Add(e.name, e.thumbs...)
	}
	return d.p
}

// The legend's text size, the width of a swatch, the space between rows,
// and between columns.
var (
	legendSize  = vg.Points(10)
	legendThumb = vg.Points(22)
	legendPad   = vg.Points(3)
	legendGap   = vg.Points(18)
)

func legendText() text.Style {
	return text.Style{Font: font.From(plot.DefaultFont, legendSize), Handler: plot.DefaultTextHandler}
}

// legendLayout lays entries out in rows, left to right and then down, in
// as many columns of one width (up to 3) as fit in width: it returns the
// width of each column and the number of rows.
func legendLayout(entries []entry, width vg.Length) (cols []vg.Length, rows int) {
	sty := legendText()
	widest := vg.Length(0)
	for _, e := range entries {
		widest = max(widest, legendThumb+sty.Rectangle(" "+e.name).Max.X)
	}
	n := max(1, min(3, len(entries), int((width+legendGap)/(widest+legendGap))))
	cols = make([]vg.Length, n)
	for i := range cols {
		cols[i] = widest
	}
	return cols, (len(entries) + n - 1) / n
}

// rowHeight is the height of a row of the legend.
func rowHeight() vg.Length {
	sty := legendText()
	return sty.Rectangle("Mg").Max.Y + legendPad
}

// legendHeight is the room the legend of entries takes below a plot of
// width w.
func legendHeight(entries []entry, w vg.Length) vg.Length {
	if len(entries) == 0 {
		return 0
	}
	_, rows := legendLayout(entries, w-vg.Inch)
	return vg.Length(rows)*rowHeight() + vg.Points(8)
}

// drawLegend draws entries in c, in the columns legendLayout gives,
// starting at left.
func drawLegend(c draw.Canvas, entries []entry, left vg.Length) {
	cols, _ := legendLayout(entries, c.Max.X-left-vg.Points(6))
	x := left
	for j, w := range cols {
		l := plot.NewLegend()
		l.TextStyle = legendText()
		l.Top, l.Left = true, true
		l.ThumbnailWidth = legendThumb
		l.Padding = legendPad
		for i := j; i < len(entries); i += len(cols) {
			l.Add(entries[i].name, entries[i].thumbs...)
		}
		col := c
		col.Min.X, col.Max.X = x, x+w
		l.Draw(col)
		x += w + legendGap
	}
}

// render draws f on a canvas of format ("png", "svg", …): the plot in the
// figure's size, and below it the legend, for a figure that has one.
func render(f Figure, format string) (vg.CanvasWriterTo, error) {
	b, ok := f.(builder)
	if !ok {
		p, err := f.Plot()
		if err != nil {
			return nil, err
		}
		c, err := draw.NewFormattedCanvas(width, height, format)
		if err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
		p.Draw(draw.New(c))
		return c, nil
	}
	d, err := b.build()
	if err != nil {
		return nil, err
	}
	below := legendHeight(d.legend, width)
	c, err := draw.NewFormattedCanvas(width, height+below, format)
	if err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	dc := draw.New(c)
	top := draw.Crop(dc, 0, 0, below, 0)
	drawYLabelled(d.p, top)
	if below > 0 {
		area := dc
		area.Max.Y = dc.Min.Y + below - vg.Points(4)
		drawLegend(area, d.legend, d.p.DataCanvas(top).Min.X)
	}
	return c, nil
}

// drawYLabelled draws p on c, its y axis label centred on the data: gonum
// reserves room for the label by a box centred on the mean of the axis'
// ends, which on a log axis lies near its top, and shrinks the axis to fit
// it there, leaving a gap under the title. Here gonum reserves the room
// with blank lines of the label's height, and the label is drawn after.
func drawYLabelled(p *plot.Plot, c draw.Canvas) {
	label := p.Y.Label.Text
	if label == "" {
		p.Draw(c)
		return
	}
	p.Y.Label.Text = strings.Repeat(" \n", strings.Count(label, "\n")) + " "
	p.Draw(c)
	p.Y.Label.Text = label
	sty := p.Y.Label.TextStyle
	sty.Rotation += math.Pi / 2
	x := c.Min.X + p.Y.Label.TextStyle.Height(label) - p.Y.Label.TextStyle.FontExtents().Descent
	data := p.DataCanvas(c)
	c.FillText(sty, vg.Point{X: x, Y: (data.Min.Y + data.Max.Y) / 2}, label)
}
