package plots

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// markers tell series apart in a terminal chart, in the order series use them.
var markers = []rune{'●', '○', '■', '□', '▲', '△', '◆', '◇'}

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

func terminalLines(w io.Writer, f Lines, cols int) error {
	if err := f.validate(); err != nil {
		return err
	}
	f = f.withAxes()
	const rows, margin = 12, 8
	width := max(cols-margin-1, 20)
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range f.Series {
		for i := range s.X {
			minX, maxX, maxY = math.Min(minX, s.X[i]), math.Max(maxX, s.X[i]), math.Max(maxY, s.Y[i])
		}
		for _, o := range s.OutOfMemory {
			minX, maxX, maxY = math.Min(minX, o.X), math.Max(maxX, o.X), math.Max(maxY, o.Y)
		}
	}
	minY := math.Inf(1)
	for _, s := range f.Series {
		for _, y := range s.Y {
			minY = math.Min(minY, y)
		}
	}
	for _, c := range f.Ceilings {
		maxY = math.Max(maxY, c.Value)
	}
	maxY *= 1.05
	if maxY == 0 {
		maxY = 1
	}
	if !f.LogY || minY >= maxY {
		minY = 0
	}
	// scale maps a y value to [0, 1] up the chart, linearly or by its log.
	scale := func(y float64) float64 { return (y - minY) / (maxY - minY) }
	unscale := func(t float64) float64 { return minY + t*(maxY-minY) }
	if minY > 0 {
		scale = func(y float64) float64 { return math.Log(y/minY) / math.Log(maxY/minY) }
		unscale = func(t float64) float64 { return minY * math.Pow(maxY/minY, t) }
	}
	xpos := func(x float64) int {
		lo, hi, v := minX, maxX, x
		if f.LogX {
			lo, hi, v = math.Log2(minX), math.Log2(maxX), math.Log2(x)
		}
		if hi == lo {
			return width / 2
		}
		return int(math.Round((v - lo) / (hi - lo) * float64(width-1)))
	}
	ypos := func(y float64) int { // row 0 is the top
		return rows - 1 - int(math.Round(math.Max(0, math.Min(1, scale(y)))*float64(rows-1)))
	}
	oom := false
	grid := make([][]rune, rows)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", width))
	}
	for _, c := range f.Ceilings {
		r := ypos(c.Value)
		for x := range grid[r] {
			grid[r][x] = ceilingRune(c)
		}
	}
	for i, s := range f.Series {
		m := markers[i%len(markers)]
		for j := range s.X {
			if j > 0 { // dots along the segment from the previous point
				x0, x1 := xpos(s.X[j-1]), xpos(s.X[j])
				for x := x0 + 1; x < x1; x++ {
					t := float64(x-x0) / float64(x1-x0)
					r := ypos(s.Y[j-1] + t*(s.Y[j]-s.Y[j-1]))
					if grid[r][x] == ' ' || grid[r][x] == '┈' || grid[r][x] == '╌' {
						grid[r][x] = '·'
					}
				}
			}
			grid[ypos(s.Y[j])][xpos(s.X[j])] = m
		}
		for _, o := range s.OutOfMemory {
			r := rows - 1
			if o.Y > 0 {
				r = ypos(o.Y)
			}
			grid[r][xpos(o.X)] = '×'
			oom = true
		}
	}
	fmt.Fprintf(w, "%s\n", f.Title)
	if f.Subtitle != "" {
		fmt.Fprintf(w, "%s\n", f.Subtitle)
	}
	fmt.Fprintf(w, "%*s\n", margin, f.YLabel)
	for r, line := range grid {
		label := ""
		switch r {
		case 0:
			label = axisValue(maxY)
		case rows / 2:
			label = axisValue(unscale(float64(rows-1-r) / float64(rows-1)))
		case rows - 1:
			label = axisValue(minY)
		}
		fmt.Fprintf(w, "%*s ┤%s\n", margin-1, label, strings.TrimRight(string(line), " "))
	}
	fmt.Fprintf(w, "%*s └%s\n", margin-1, "", strings.Repeat("─", width))
	lo, hi := axisValue(axisEnd(minX, maxX-minX)), axisValue(axisEnd(maxX, maxX-minX))
	if f.LogX {
		lo, hi = powerLabel(math.Log2(minX), math.Log2(maxX)), powerLabel(math.Log2(maxX), math.Log2(maxX))
	}
	gap := max(width-len(lo)-len(hi)-len(f.XLabel)-2, 2)
	fmt.Fprintf(w, "%*s  %s%*s%s%*s%s\n", margin-1, "", lo, gap/2, "", f.XLabel, gap-gap/2, "", hi)
	var legend []string
	for i, s := range f.Series {
		legend = append(legend, fmt.Sprintf("%c %s", markers[i%len(markers)], s.Name))
	}
	for _, c := range f.Ceilings {
		legend = append(legend, string(ceilingRune(c))+" "+c.Name)
	}
	if oom {
		legend = append(legend, "× out of memory")
	}
	fmt.Fprintf(w, "%*s  %s\n", margin-1, "", strings.Join(legend, "   "))
	return nil
}

// ceilingRune draws a measured baseline ┈ and a peak ╌.
func ceilingRune(c Ceiling) rune {
	if c.Peak {
		return '╌'
	}
	return '┈'
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
