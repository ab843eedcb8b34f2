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

// benchTable lists bench results: time, throughput and share of the
// ceiling. A size that did not run says why in place of its figures.
func benchTable(rs []Result) *Table {
	unit := rs[0].Unit
	t := &Table{
		Headers: []string{"variant", "size", "block", "time (µs)", unit, "% of ceiling", "memory (MiB)"},
		Right:   []bool{false, false, true, true, true, true, true},
	}
	var ceil *Result
	for i, r := range rs {
		block := "—"
		if r.Block > 0 {
			block = fmt.Sprint(r.Block)
		}
		if !r.Measured() {
			mem := "—"
			if r.NeedMem > 0 {
				mem = fmt.Sprintf("needs %.1f", float64(r.NeedMem)/(1<<20))
			}
			t.add(r.Variant, r.Size, block, outcomeLabel(r), "—", "—", mem)
			continue
		}
		if ceil == nil && r.CeilingName != "" {
			ceil = &rs[i]
		}
		t.add(r.Variant, r.Size, block, fmt.Sprintf("%.1f", r.MedianMs*1e3), fmt.Sprintf("%.1f", r.Throughput),
			pct(r.OfCeiling()), fmt.Sprintf("%.1f", float64(r.PeakMem)/(1<<20)))
	}
	if ceil != nil {
		t.Notes = append(t.Notes, fmt.Sprintf("ceiling: %s, %.1f %s, measured in the same run", ceil.CeilingName, ceil.Ceiling, unit))
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
	t.Notes = append(t.Notes, whyNotRun(rs)...)
	return t
}

// outcomeLabel is the short word a table shows for a result that did not
// run to the end.
func outcomeLabel(r Result) string {
	switch {
	case r.Outcome != "":
		return r.Outcome
	case !r.Passed:
		return "FAILED"
	}
	return "ok"
}

// whyNotRun explains the results of rs that did not run to the end, once
// per reason: a table's cells are too narrow for it. Sizes refused or
// skipped for one reason are listed together.
func whyNotRun(rs []Result) []string {
	type group struct {
		head, reason string
		sizes        []string
	}
	var order []*group
	groups := map[string]*group{}
	for _, r := range rs {
		if r.Measured() || r.Detail == "" || r.Outcome == "" && r.Kind == "check" {
			continue
		}
		g := &group{reason: firstLineOf(r.Detail)}
		switch r.Outcome {
		case Refused:
			g.head = r.Variant + " refused"
			g.reason, _, _ = strings.Cut(g.reason, ", got ")
		case Skipped:
			g.head = r.Variant + " skipped"
		case OutOfMemory:
			g.head = "" // the reason names the size
		default:
			g.head = r.Variant + ", " + r.Size
		}
		key := g.head + "\x00" + g.reason
		if old, ok := groups[key]; ok {
			g = old
		} else {
			groups[key] = g
			order = append(order, g)
		}
		if r.Outcome == Refused || r.Outcome == Skipped {
			g.sizes = append(g.sizes, r.Size)
		}
	}
	var out []string
	for _, g := range order {
		switch {
		case g.head == "":
			out = append(out, g.reason)
		case len(g.sizes) > 0:
			out = append(out, fmt.Sprintf("%s at %s: %s", g.head, strings.Join(g.sizes, ", "), g.reason))
		default:
			out = append(out, g.head+": "+g.reason)
		}
	}
	return out
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// checkTable lists check results. Rows that measured nothing (refused,
// out of memory, timed out, faulted or skipped) show no error figures.
func checkTable(rs []Result) *Table {
	t := &Table{Headers: []string{"variant", "size", "max rel. error", "tolerance", "result"}, Right: []bool{false, false, true, true, false}}
	for _, r := range rs {
		errCell, tolCell := "—", "—"
		if r.Outcome == "" && r.Tolerance > 0 {
			errCell, tolCell = fmt.Sprintf("%.1e", r.MaxRelErr), fmt.Sprintf("%.0e", r.Tolerance)
		}
		t.add(r.Variant, r.Size, errCell, tolCell, outcomeLabel(r))
	}
	t.Notes = whyNotRun(rs)
	return t
}

func pct(f float64) string {
	if f == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*f)
}
