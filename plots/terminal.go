package plots

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Terminal writes f as a Unicode chart cols columns wide, for a terminal.
func Terminal(w io.Writer, f Figure, cols int) error {
	switch f := f.(type) {
	case Lines:
		return terminalLines(w, f, cols)
	case Bars:
		return terminalBars(w, f, cols)
	case Timeline:
		return terminalTimeline(w, f, cols)
	}
	return fmt.Errorf("plots: no terminal chart for %T", f)
}

// axisValue formats an axis value in at most 7 characters.
func axisValue(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1e6 || a < 1e-2:
		return fmt.Sprintf("%.1e", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// axisEnd is v, an end of a linear axis spanning span, or 0 where v is too
// small against the span to tell from it (a trace that starts 2 µs into an
// 11 s run starts at 0, not at 2.0e-06).
func axisEnd(v, span float64) float64 {
	if math.Abs(v) < span*1e-3 {
		return 0
	}
	return v
}

// chartRows is about how many rows a terminal chart's plot takes.
const chartRows = 12

// yAxis is a terminal chart's y axis: rows rows from lo (the bottom) to hi
// (the top), linear or logarithmic, and the labels of some rows.
type yAxis struct {
	lo, hi float64
	log    bool
	rows   int
	labels map[int]string // row (0 the top) → label
}

// newYAxis lays out the y axis of values from lo to hi. A linear axis runs
// from 0 to a round value a little above hi, labelled at round steps
// (1, 2, 2.5 or 5 times a power of ten) that fall on rows; a log axis runs
// from a little below lo to a little above hi, labelled at the powers of
// ten (and over a short range at 2 and 5 times them) on their nearest
// rows, as its points are drawn, no two labels on neighbouring rows.
func newYAxis(lo, hi float64, log bool) yAxis {
	if log && lo > 0 && hi > lo {
		ax := yAxis{lo: lo / 1.2, hi: hi * 1.2, log: true, rows: chartRows + 1, labels: map[int]string{}}
		decades := math.Log10(ax.hi / ax.lo)
		ms := []float64{1}
		if decades < 2.5 {
			ms = append(ms, 2, 5)
		}
		taken := map[int]bool{}
		for _, m := range ms { // powers of ten first: they keep their rows
			for e := math.Floor(math.Log10(ax.lo)); e <= math.Ceil(math.Log10(ax.hi)); e++ {
				v := m * math.Pow(10, e)
				r := ax.row(v)
				if v < ax.lo || v > ax.hi || taken[r-1] || taken[r] || taken[r+1] {
					continue
				}
				taken[r], ax.labels[r] = true, formatTick(v)
			}
		}
		return ax
	}
	if hi <= 0 {
		hi = 1
	}
	// The top: k steps of a round step, k dividing the 12 intervals so
	// that every label falls on a row.
	best := yAxis{hi: math.Inf(1)}
	for _, k := range []int{2, 3, 4, 6} {
		step := niceStep(hi, k) // at least hi/k
		if top := step * float64(k); top < best.hi {
			best = yAxis{hi: top, rows: chartRows + 1, labels: map[int]string{}}
			for i := 0; i <= k; i++ {
				best.labels[chartRows-i*chartRows/k] = formatTick(float64(i) * step)
			}
		}
	}
	return best
}

// row is the row of value y, 0 at the top, clamped to the chart.
func (a yAxis) row(y float64) int {
	t := y / a.hi
	if a.log {
		t = math.Log(y/a.lo) / math.Log(a.hi/a.lo)
	} else if a.hi > 0 {
		t = (y - a.lo) / (a.hi - a.lo)
	}
	return a.rows - 1 - int(math.Round(math.Max(0, math.Min(1, t))*float64(a.rows-1)))
}

// Characters of a terminal chart that are not a series' marker.
const (
	crowded  = '*' // two or more series' points in one character
	refusedX = '×' // a size out of memory
	refusedY = '┊' // the column of a size out of memory, where nothing was measured
	segment  = '·' // between two points of a series
)

// margin is the width of a terminal chart's y labels.
const margin = 8

// chart is a terminal chart of Lines being drawn: a grid of characters
// over the y axis' rows, and what its legend must explain.
type chart struct {
	f     Lines
	ext   extent
	ax    yAxis
	width int
	looks []look
	grid  [][]rune
	owner [][]int // the series whose marker is in a cell, -1 for none
	// refused is the row above the chart that holds the × of sizes where
	// nothing was measured.
	refused                       []rune
	measuredOOM, neededOOM, crowd bool
}

func terminalLines(w io.Writer, f Lines, cols int) error {
	if err := f.validate(); err != nil {
		return err
	}
	f = f.withAxes()
	c := newChart(f, max(cols-margin-1, 20))
	c.drawCeilings()
	c.drawRefusals()
	for i := range f.Series {
		c.drawSeries(i)
	}
	c.print(w)
	for _, line := range wrapLegend(c.legend(), cols-margin-1) {
		fmt.Fprintf(w, "%*s  %s\n", margin-1, "", line)
	}
	return nil
}

// newChart returns an empty chart of f, width characters wide.
func newChart(f Lines, width int) *chart {
	ext := extentOf(f)
	c := &chart{f: f, ext: ext, ax: newYAxis(ext.minY, ext.maxY, f.LogY), width: width, looks: looks(f.Series),
		refused: []rune(strings.Repeat(" ", width))}
	c.grid, c.owner = make([][]rune, c.ax.rows), make([][]int, c.ax.rows)
	for r := range c.grid {
		c.grid[r] = []rune(strings.Repeat(" ", width))
		c.owner[r] = slices.Repeat([]int{-1}, width)
	}
	return c
}

// col is the column of x.
func (c *chart) col(x float64) int {
	lo, hi, v := c.ext.minX, c.ext.maxX, x
	if c.f.LogX {
		lo, hi, v = math.Log2(lo), math.Log2(hi), math.Log2(x)
	}
	if hi == lo {
		return c.width / 2
	}
	return int(math.Round((v - lo) / (hi - lo) * float64(c.width-1)))
}

func (c *chart) drawCeilings() {
	for _, ce := range c.f.Ceilings {
		r := c.ax.row(ce.Value)
		for x := range c.grid[r] {
			c.grid[r][x] = ceilingRune(ce)
		}
	}
}

// drawRefusals marks each size where nothing was measured: a column of ┊,
// and a × above the chart, in a row of its own that no value reaches.
func (c *chart) drawRefusals() {
	for _, s := range c.f.Series {
		for _, o := range s.OutOfMemory {
			if o.Y > 0 {
				continue
			}
			c.measuredOOM = true
			x := c.col(o.X)
			c.refused[x] = refusedX
			for r := range c.grid {
				if c.grid[r][x] == ' ' {
					c.grid[r][x] = refusedY
				}
			}
		}
	}
}

// drawSeries draws series i: dots between its points, its marker at each
// (* where another series' marker is there already), and a × at what a
// size out of memory would need.
func (c *chart) drawSeries(i int) {
	s := c.f.Series[i]
	for j := range s.X {
		if j > 0 {
			x0, x1 := c.col(s.X[j-1]), c.col(s.X[j])
			for x := x0 + 1; x < x1; x++ {
				t := float64(x-x0) / float64(x1-x0)
				y := s.Y[j-1] + t*(s.Y[j]-s.Y[j-1])
				if c.f.LogY {
					y = s.Y[j-1] * math.Pow(s.Y[j]/s.Y[j-1], t)
				}
				if r := c.ax.row(y); strings.ContainsRune(" ┈╌┊", c.grid[r][x]) {
					c.grid[r][x] = segment
				}
			}
		}
		r, x := c.ax.row(s.Y[j]), c.col(s.X[j])
		if o := c.owner[r][x]; o >= 0 && o != i {
			c.grid[r][x], c.crowd = crowded, true
			continue
		}
		c.grid[r][x], c.owner[r][x] = c.looks[i].marker, i
	}
	for _, o := range s.OutOfMemory {
		if o.Y > 0 {
			c.grid[c.ax.row(o.Y)][c.col(o.X)], c.neededOOM = refusedX, true
		}
	}
}

// print writes the chart: title, y label, rows, x axis.
func (c *chart) print(w io.Writer) {
	f, ext := c.f, c.ext
	fmt.Fprintf(w, "%s\n", f.Title)
	if f.Subtitle != "" {
		fmt.Fprintf(w, "%s\n", f.Subtitle)
	}
	ylabel := f.YLabel
	if f.LogY {
		ylabel += ", log scale"
	}
	fmt.Fprintf(w, "%*s\n", margin, ylabel)
	if c.measuredOOM {
		fmt.Fprintf(w, "%*s  %s\n", margin-1, "", strings.TrimRight(string(c.refused), " "))
	}
	for r, line := range c.grid {
		fmt.Fprintf(w, "%*s ┤%s\n", margin-1, c.ax.labels[r], strings.TrimRight(string(line), " "))
	}
	fmt.Fprintf(w, "%*s └%s\n", margin-1, "", strings.Repeat("─", c.width))
	lo, hi := axisValue(axisEnd(ext.minX, ext.maxX-ext.minX)), axisValue(axisEnd(ext.maxX, ext.maxX-ext.minX))
	xlabel := f.XLabel
	if f.LogX {
		lo, hi = powerLabel(math.Log2(ext.minX), math.Log2(ext.maxX)), powerLabel(math.Log2(ext.maxX), math.Log2(ext.maxX))
		xlabel += ", log scale"
	}
	gap := max(c.width-len(lo)-len(hi)-utf8.RuneCountInString(xlabel)-2, 2)
	fmt.Fprintf(w, "%*s  %s%*s%s%*s%s\n", margin-1, "", lo, gap/2, "", xlabel, gap-gap/2, "", hi)
}

// legend is an entry for each series and ceiling, and for each mark the
// chart uses that is neither.
func (c *chart) legend() []string {
	var legend []string
	for i, s := range c.f.Series {
		legend = append(legend, fmt.Sprintf("%c %s", c.looks[i].marker, s.Name))
	}
	for _, ce := range c.f.Ceilings {
		legend = append(legend, string(ceilingRune(ce))+" "+ce.Name)
	}
	if c.measuredOOM {
		legend = append(legend, string(refusedY)+string(refusedX)+" out of memory at this size: nothing measured")
	}
	if c.neededOOM {
		legend = append(legend, string(refusedX)+" out of memory: what the size would need")
	}
	if c.crowd {
		legend = append(legend, string(crowded)+" two or more series at one point")
	}
	return legend
}

// wrapLegend joins a legend's entries into lines of at most width
// characters, three spaces apart; an entry longer than width has a line
// of its own.
func wrapLegend(entries []string, width int) []string {
	var lines []string
	cur := ""
	for _, e := range entries {
		switch {
		case cur == "":
			cur = e
		case utf8.RuneCountInString(cur)+3+utf8.RuneCountInString(e) <= width:
			cur += "   " + e
		default:
			lines = append(lines, cur)
			cur = e
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// ceilingRune draws a measured baseline ╌ (dashed, as in the figures) and
// a limit ┈ (dotted).
func ceilingRune(c Ceiling) rune {
	if c.Peak {
		return '┈'
	}
	return '╌'
}

// eighths draws the fractional end of a bar.
var eighths = []rune{' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'}

func terminalBars(w io.Writer, b Bars, cols int) error {
	if err := b.validate(); err != nil {
		return err
	}
	b = b.withAxes()
	if b.Stacked {
		return terminalStacked(w, b, cols)
	}
	labelW := 0
	for _, g := range b.Groups {
		for _, s := range b.Series {
			labelW = max(labelW, len([]rune(barLabel(g, s.Name, len(b.Series)))))
		}
	}
	maxV := 0.0
	for _, s := range b.Series {
		for _, v := range s.Values {
			maxV = math.Max(maxV, v)
		}
	}
	for _, c := range b.Ceilings {
		maxV = math.Max(maxV, c.Value)
	}
	if maxV == 0 {
		maxV = 1
	}
	// length is a value's share of the bar's full width, by its log where
	// the values span more than 100×, from a third of the smallest.
	length := func(v float64) float64 { return v / maxV }
	if b.LogY {
		lo := math.Inf(1)
		for _, s := range b.Series {
			for _, v := range s.Values {
				if v > 0 {
					lo = math.Min(lo, v)
				}
			}
		}
		lo /= 3
		length = func(v float64) float64 { return math.Max(0, math.Log(v/lo)/math.Log(maxV/lo)) }
	}
	barW := max(cols-labelW-14, 10)
	fmt.Fprintf(w, "%s\n", b.Title)
	if b.Subtitle != "" {
		fmt.Fprintf(w, "%s\n", b.Subtitle)
	}
	for gi, g := range b.Groups {
		for _, s := range b.Series {
			v := s.Values[gi]
			eighthsLong := int(math.Round(length(v) * float64(barW) * 8))
			bar := strings.Repeat("█", eighthsLong/8) + strings.TrimSpace(string(eighths[eighthsLong%8]))
			fmt.Fprintf(w, "%-*s %s %s\n", labelW, barLabel(g, s.Name, len(b.Series)), bar, axisValue(v))
		}
	}
	for _, c := range b.Ceilings {
		fmt.Fprintf(w, "%-*s %s┊ %s %s\n", labelW, "", strings.Repeat(" ", int(math.Round(length(c.Value)*float64(barW)))), c.Name, axisValue(c.Value))
	}
	unit := b.YLabel
	if b.LogY {
		unit += ", bars on a log scale"
	}
	fmt.Fprintf(w, "%-*s (%s)\n", labelW, "", unit)
	return nil
}

// stackShades tell a stacked bar's parts apart, one per series.
var stackShades = []rune{'█', '▓', '▒', '░', '▞', '▚', '▤', '▥'}

// terminalStacked draws a bar per group made of its series' parts, each in
// a shade of its own, the total at the end and a legend of the shades.
func terminalStacked(w io.Writer, b Bars, cols int) error {
	labelW := 0
	for _, g := range b.Groups {
		labelW = max(labelW, len([]rune(g)))
	}
	totals := make([]float64, len(b.Groups))
	maxV := 0.0
	for gi := range b.Groups {
		for _, s := range b.Series {
			totals[gi] += s.Values[gi]
		}
		maxV = math.Max(maxV, totals[gi])
	}
	if maxV == 0 {
		maxV = 1
	}
	barW := max(cols-labelW-14, 10)
	fmt.Fprintf(w, "%s\n", b.Title)
	if b.Subtitle != "" {
		fmt.Fprintf(w, "%s\n", b.Subtitle)
	}
	for gi, g := range b.Groups {
		var bar strings.Builder
		acc, drawn := 0.0, 0
		for si, s := range b.Series {
			acc += s.Values[gi]
			end := int(math.Round(acc / maxV * float64(barW)))
			if s.Values[gi] > 0 && end == drawn {
				end++ // every part that is there shows, however thin
			}
			bar.WriteString(strings.Repeat(string(stackShades[si%len(stackShades)]), max(0, end-drawn)))
			drawn = max(drawn, end)
		}
		fmt.Fprintf(w, "%-*s %s %s\n", labelW, g, bar.String(), axisValue(totals[gi]))
	}
	var legend []string
	for si, s := range b.Series {
		legend = append(legend, fmt.Sprintf("%c %s", stackShades[si%len(stackShades)], s.Name))
	}
	fmt.Fprintf(w, "%-*s %s\n", labelW, "", strings.Join(legend, "   "))
	fmt.Fprintf(w, "%-*s (%s)\n", labelW, "", b.YLabel)
	return nil
}

func barLabel(group, series string, nSeries int) string {
	if nSeries == 1 {
		return group
	}
	return group + " " + series
}
