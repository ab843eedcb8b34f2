package lessons

import (
	"fmt"
	"html"
	"io"
	"strings"
	"unicode/utf8"
)

// Table is a results table: text columns left, numbers right, and notes
// under it. The REPL prints it; a notebook shows it as HTML.
type Table struct {
	Headers []string
	Right   []bool // right-align this column
	Rows    [][]string
	Notes   []string // lines under the table
}

func (t *Table) add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints t with aligned columns.
func (t *Table) Write(w io.Writer) {
	widths := make([]int, len(t.Headers))
	for i, h := range t.Headers {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.Right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.Headers)
	rule := make([]string, len(widths))
	for i, n := range widths {
		rule[i] = strings.Repeat("─", n)
	}
	line(rule)
	for _, r := range t.Rows {
		line(r)
	}
	for _, n := range t.Notes {
		fmt.Fprintln(w, n)
	}
}

// HTML renders t as an HTML table, numbers right-aligned.
func (t *Table) HTML() string {
	var b strings.Builder
	b.WriteString("<table>\n<thead><tr>")
	for i, h := range t.Headers {
		fmt.Fprintf(&b, "<th style=\"text-align:%s\">%s</th>", align(t.Right[i]), html.EscapeString(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range t.Rows {
		b.WriteString("<tr>")
		for i, c := range r {
			fmt.Fprintf(&b, "<td style=\"text-align:%s\">%s</td>", align(t.Right[i]), html.EscapeString(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(n))
	}
	return b.String()
}

func align(right bool) string {
	if right {
		return "right"
	}
	return "left"
}

// benchTable lists bench results: time, throughput and share of the ceiling.
func benchTable(rs []Result) *Table {
	unit, ceil := rs[0].Unit, rs[0].CeilingName
	t := &Table{
		Headers: []string{"variant", "size", "block", "time (µs)", unit, "% of ceiling", "memory (MiB)"},
		Right:   []bool{false, false, true, true, true, true, true},
	}
	for _, r := range rs {
		block := "—"
		if r.Block > 0 {
			block = fmt.Sprint(r.Block)
		}
		t.add(r.Variant, r.Size, block, fmt.Sprintf("%.1f", r.MedianMs*1e3), fmt.Sprintf("%.1f", r.Throughput),
			pct(r.OfCeiling()), fmt.Sprintf("%.1f", float64(r.PeakMem)/(1<<20)))
	}
	if ceil != "" {
		t.Notes = append(t.Notes, fmt.Sprintf("ceiling: %s, %.1f %s, measured in the same run", ceil, rs[0].Ceiling, unit))
	}
	over, worst := 0, 0.0
	for _, r := range rs {
		if f := r.OfCeiling(); f > 1.02 {
			over++
			worst = max(worst, f)
		}
	}
	if over > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("note: %d of these exceed the ceiling, by up to %.0f%%. A ceiling is one measurement, in one precision at one size: clocks and sizes move it by a few per cent, and a faster precision passes it.", over, 100*(worst-1)))
	}
	return t
}

// checkTable lists check results.
func checkTable(rs []Result) *Table {
	t := &Table{Headers: []string{"variant", "size", "max rel. error", "tolerance", "result"}, Right: []bool{false, false, true, true, false}}
	for _, r := range rs {
		result := "ok"
		switch {
		case !r.Passed:
			result = "FAILED"
		case strings.HasPrefix(r.Detail, "refused: "):
			result = r.Detail
		}
		t.add(r.Variant, r.Size, fmt.Sprintf("%.1e", r.MaxRelErr), fmt.Sprintf("%.0e", r.Tolerance), result)
	}
	return t
}

func pct(f float64) string {
	if f == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*f)
}
