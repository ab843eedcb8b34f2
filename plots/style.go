package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Style fixes how a series is drawn across figures: Colour indexes the
// palette and Marker the markers (both wrap around). A lesson gives each
// of its series one Style, so that a series looks the same in every
// figure of the lesson; a series without one takes the first colour and
// marker that no styled series of its figure has.
type Style struct {
	Colour, Marker int
}

// Styles is how many colours and markers there are before they repeat.
const Styles = 8

// palette is colour-blind safe (Okabe–Ito, the yellow darkened to read on
// white), in the order series use it: the first five are five hues, and
// the pairs that look alike (blue and sky blue, vermillion and orange)
// are kept apart. The red of the ceilings is kept apart from it.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{90, 90, 90, 255},    // grey
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{180, 160, 0, 255},   // yellow, darkened
}

var ceilingRed = color.RGBA{180, 30, 30, 255}

// The shapes of the markers, in the order series use them: a kernel's
// filled, a library baseline's hollow. The terminal draws the same shapes
// (terminalMarkers), so that a series has one marker everywhere.
var shapes = []shape{
	{sides: 0},                                // circle
	{sides: 4, turn: math.Pi / 4},             // square
	{sides: 3, turn: math.Pi / 2},             // triangle, up
	{sides: 4},                                // diamond
	{sides: 3, turn: -math.Pi / 2},            // triangle, down
	{sides: 3, turn: math.Pi},                 // triangle, left
	{sides: 3},                                // triangle, right
	{sides: 5, turn: math.Pi / 2, star: true}, // star
}

// terminalMarkers are the shapes as characters: filled, then hollow.
var terminalMarkers = [2][]rune{
	{'●', '■', '▲', '◆', '▼', '◀', '▶', '★'},
	{'○', '□', '△', '◇', '▽', '◁', '▷', '☆'},
}

// dashPatterns tell baselines apart beyond their colour and marker.
var dashPatterns = [][]vg.Length{
	{vg.Points(5), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(7), vg.Points(2), vg.Points(1.5), vg.Points(2)},
}

// look is how one series of a figure is drawn: its colour, its marker in
// the figure and in a terminal, and for a library baseline a dash pattern.
type look struct {
	colour color.Color
	glyph  draw.GlyphDrawer
	marker rune
	dashes []vg.Length
}

// lookOf is the look of a series of style st.
func lookOf(st Style, baseline bool) look {
	m := st.Marker % len(shapes)
	lk := look{colour: palette[st.Colour%len(palette)], glyph: shapes[m], marker: terminalMarkers[0][m]}
	if baseline {
		sh := shapes[m]
		sh.hollow = true
		lk.glyph, lk.marker, lk.dashes = sh, terminalMarkers[1][m], dashPatterns[st.Marker%len(dashPatterns)]
	}
	return lk
}

// looks returns the look of each of series: its Style where it has one,
// else the first colour and the first marker, in order, that no other
// series of the figure has taken.
func looks(series []Series) []look {
	colours, markers := map[int]bool{}, map[int]bool{}
	for _, s := range series {
		if s.Style != nil {
			colours[s.Style.Colour%len(palette)], markers[s.Style.Marker%len(shapes)] = true, true
		}
	}
	free := func(taken map[int]bool) int {
		for i := range Styles {
			if !taken[i] {
				taken[i] = true
				return i
			}
		}
		return len(taken) // all taken: wrap around
	}
	out := make([]look, len(series))
	for i, s := range series {
		st := Style{}
		if s.Style != nil {
			st = *s.Style
		} else {
			st = Style{Colour: free(colours), Marker: free(markers)}
		}
		out[i] = lookOf(st, s.Baseline)
	}
	return out
}

// shape is a marker: a circle (sides 0), a regular polygon turned by
// turn radians, or a star of sides points; filled, or drawn as an
// outline where hollow.
type shape struct {
	sides  int
	turn   float64
	star   bool
	hollow bool
}

// DrawGlyph draws the shape at pt.
func (s shape) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	var p vg.Path
	switch {
	case s.sides == 0:
		p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		p.Arc(pt, r, 0, 2*math.Pi)
	default:
		n, step := s.sides, 2*math.Pi/float64(s.sides)
		if s.star {
			n, step = 2*s.sides, math.Pi/float64(s.sides)
			r *= 1.25 // a star's points reach further than a polygon's corners
		}
		if s.sides == 3 {
			r *= 1.15 // a triangle looks smaller than a circle of its radius
		}
		for i := range n {
			rad := r
			if s.star && i%2 == 1 {
				rad = r * 0.45
			}
			a := s.turn + float64(i)*step
			q := vg.Point{X: pt.X + rad*vg.Length(math.Cos(a)), Y: pt.Y + rad*vg.Length(math.Sin(a))}
			if i == 0 {
				p.Move(q)
			} else {
				p.Line(q)
			}
		}
	}
	p.Close()
	if s.hollow {
		c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1)})
		c.Stroke(p)
		return
	}
	c.SetColor(sty.Color)
	c.Fill(p)
}

// ceilingLine is the style of c's line.
func ceilingLine(c Ceiling) (color.Color, []vg.Length) {
	if c.Peak {
		return color.Black, []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return ceilingRed, []vg.Length{vg.Points(10), vg.Points(4)}
}
