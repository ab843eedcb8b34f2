package lessons

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// table renders aligned columns: text left, numbers right.
type table struct {
	headers []string
	right   []bool // right-align this column
	rows    [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	widths := make([]int, len(t.headers))
	for i, h := range t.headers {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
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
			if t.right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.headers)
	rule := make([]string, len(widths))
	for i, n := range widths {
		rule[i] = strings.Repeat("─", n)
	}
	line(rule)
	for _, r := range t.rows {
		line(r)
	}
}

// benchTable lists bench results: time, throughput and share of the ceiling.
func benchTable(w io.Writer, rs []Result) {
	if len(rs) == 0 {
		return
	}
	unit, ceil := rs[0].Unit, rs[0].CeilingName
	t := &table{
		headers: []string{"variant", "size", "block", "time (µs)", unit, "% of ceiling", "memory (MiB)"},
		right:   []bool{false, false, true, true, true, true, true},
	}
	for _, r := range rs {
		block := "—"
		if r.Block > 0 {
			block = fmt.Sprint(r.Block)
		}
		t.add(r.Variant, r.Size, block, fmt.Sprintf("%.1f", r.MedianMs*1e3), fmt.Sprintf("%.1f", r.Throughput),
			pct(r.OfCeiling()), fmt.Sprintf("%.1f", float64(r.PeakMem)/(1<<20)))
	}
	t.write(w)
	if ceil != "" {
		fmt.Fprintf(w, "ceiling: %s, %.1f %s, measured in the same run\n", ceil, rs[0].Ceiling, unit)
	}
	over, worst := 0, 0.0
	for _, r := range rs {
		if f := r.OfCeiling(); f > 1.02 {
			over++
			worst = max(worst, f)
		}
	}
	if over > 0 {
		fmt.Fprintf(w, "note: %d of these exceed the ceiling, by up to %.0f%%. A ceiling is one measurement at one size; clocks and sizes move it by a few per cent.\n", over, 100*(worst-1))
	}
}

// checkTable lists check results.
func checkTable(w io.Writer, rs []Result) {
	t := &table{headers: []string{"variant", "size", "max rel. error", "tolerance", "result"}, right: []bool{false, false, true, true, false}}
	for _, r := range rs {
		result := "ok"
		if !r.Passed {
			result = "FAILED"
		}
		t.add(r.Variant, r.Size, fmt.Sprintf("%.1e", r.MaxRelErr), fmt.Sprintf("%.0e", r.Tolerance), result)
	}
	t.write(w)
}

func pct(f float64) string {
	if f == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*f)
}
