package plots

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Timeline is a figure of what ran when: a row a lane (a stream, say),
// each span a bar from its start to its end, coloured by its kind ("copy
// in", "compute", …) with a legend, as a profiler's timeline draws it.
type Timeline struct {
	Title    string
	Subtitle string
	XLabel   string   // with its unit, e.g. "time (ms)"
	Lanes    []string // top to bottom, e.g. "serial", "stream 1"
	Spans    []Span
}

// Span is one piece of work on lane Lane (an index into Lanes), from Start
// to End in the x axis' unit.
type Span struct {
	Lane       int
	Kind       string
	Start, End float64
}

func (t Timeline) validate() error {
	if len(t.Lanes) == 0 {
		return errors.New("plots: timeline has no lanes")
	}
	if len(t.Spans) == 0 {
		return errors.New("plots: timeline has no spans")
	}
	for i, s := range t.Spans {
		switch {
		case s.Lane < 0 || s.Lane >= len(t.Lanes):
			return fmt.Errorf("plots: timeline span %d is on lane %d; there are %d", i, s.Lane, len(t.Lanes))
		case math.IsNaN(s.Start) || math.IsNaN(s.End) || math.IsInf(s.Start, 0) || math.IsInf(s.End, 0):
			return fmt.Errorf("plots: timeline span %d (%s) is not finite: %v to %v", i, s.Kind, s.Start, s.End)
		case s.End < s.Start:
			return fmt.Errorf("plots: timeline span %d (%s) ends at %v, before it starts at %v", i, s.Kind, s.End, s.Start)
		}
	}
	return nil
}

// kinds lists the spans' kinds in the order they first appear: the order
// of the legend and of the colours.
func (t Timeline) kinds() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range t.Spans {
		if !seen[s.Kind] {
			seen[s.Kind] = true
			out = append(out, s.Kind)
		}
	}
	return out
}

// Plot draws t: lanes down the y axis, time along the x axis.
func (t Timeline) Plot() (*plot.Plot, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	p := plot.New()
	title(p, t.Title, t.Subtitle)
	p.X.Label.Text = t.XLabel
	p.X.Min = 0
	ticks := make([]plot.Tick, len(t.Lanes))
	for i, name := range t.Lanes {
		ticks[i] = plot.Tick{Value: laneY(i, len(t.Lanes)), Label: name}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())
	for k, kind := range t.kinds() {
		sp := &spanPlotter{lanes: len(t.Lanes), colour: palette[k%len(palette)]}
		for _, s := range t.Spans {
			if s.Kind == kind {
				sp.spans = append(sp.spans, s)
			}
		}
		p.Add(sp)
		p.Legend.Add(kind, sp)
	}
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = -0.6, float64(len(t.Lanes))-0.4+0.25*float64(len(t.kinds())) // room above for the legend
	return p, nil
}

// laneY is lane i's height on the y axis: the first lane on top.
func laneY(i, lanes int) float64 { return float64(lanes - 1 - i) }

// spanPlotter draws the spans of one kind.
type spanPlotter struct {
	spans  []Span
	lanes  int
	colour color.Color
}

// Plot draws each span as a bar 0.6 of a lane high, outlined so that
// neighbouring spans stay apart.
func (sp *spanPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	outline := draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}
	for _, s := range sp.spans {
		y := laneY(s.Lane, sp.lanes)
		x0, x1 := trX(s.Start), trX(s.End)
		if x1-x0 < vg.Points(0.5) {
			x1 = x0 + vg.Points(0.5) // a span too short to see still shows
		}
		y0, y1 := trY(y-0.3), trY(y+0.3)
		rect := []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
		c.FillPolygon(sp.colour, c.ClipPolygonXY(rect))
		c.StrokeLines(outline, c.ClipLinesXY(append(rect, rect[0]))...)
	}
}

// DataRange is the spans' extent.
func (sp *spanPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, s := range sp.spans {
		xmin, xmax = math.Min(xmin, s.Start), math.Max(xmax, s.End)
	}
	return xmin, xmax, -0.5, float64(sp.lanes) - 0.5
}

// Thumbnail draws the legend's swatch.
func (sp *spanPlotter) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(sp.colour, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}})
}

// spanRunes fill a terminal timeline's spans, a rune a kind.
var spanRunes = []rune{'█', '▒', '▓', '░', '■', '▪', '≡', '#'}

// terminalTimeline writes t as rows of cols characters: a lane a row, each
// span filled with its kind's rune, then the time axis and the legend.
func terminalTimeline(w io.Writer, t Timeline, cols int) error {
	if err := t.validate(); err != nil {
		return err
	}
	label := 0
	for _, l := range t.Lanes {
		label = max(label, len([]rune(l)))
	}
	width := max(cols-label-3, 20)
	end := 0.0
	for _, s := range t.Spans {
		end = math.Max(end, s.End)
	}
	if end <= 0 {
		end = 1
	}
	col := func(x float64) int { return min(width-1, int(x/end*float64(width))) }
	kinds := t.kinds()
	runeOf := map[string]rune{}
	for i, k := range kinds {
		runeOf[k] = spanRunes[i%len(spanRunes)]
	}
	rows := make([][]rune, len(t.Lanes))
	for i := range rows {
		rows[i] = []rune(strings.Repeat(" ", width))
	}
	for _, s := range t.Spans {
		// The cells from the span's start up to, not including, the
		// cell its end falls in; at least one, so a short span shows.
		x0, x1 := col(s.Start), col(s.End)
		if s.End >= end {
			x1 = width
		}
		for x := x0; x < max(x1, x0+1); x++ {
			rows[s.Lane][x] = runeOf[s.Kind]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", t.Title)
	if t.Subtitle != "" {
		fmt.Fprintf(&b, "%s\n", t.Subtitle)
	}
	for i, l := range t.Lanes {
		fmt.Fprintf(&b, "%*s │%s\n", label, l, string(rows[i]))
	}
	fmt.Fprintf(&b, "%*s └%s\n", label, "", strings.Repeat("─", width))
	last := axisValue(end)
	fmt.Fprintf(&b, "%*s  0%*s\n", label, "", width-1, last)
	fmt.Fprintf(&b, "%*s  %s\n", label, "", t.XLabel)
	var legend []string
	for _, k := range kinds {
		legend = append(legend, fmt.Sprintf("%c %s", runeOf[k], k))
	}
	fmt.Fprintf(&b, "%*s  %s\n", label, "", strings.Join(legend, "   "))
	_, err := io.WriteString(w, b.String())
	return err
}
