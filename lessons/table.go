package lessons

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
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

// dropColumn removes column i.
func (t *Table) dropColumn(i int) {
	t.Headers = append(t.Headers[:i:i], t.Headers[i+1:]...)
	t.Right = append(t.Right[:i:i], t.Right[i+1:]...)
	for j, r := range t.Rows {
		t.Rows[j] = append(r[:i:i], r[i+1:]...)
	}
}

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

// benchTable lists bench results of p: time, throughput, its share of the
// GPU's peak (which nothing passes) and its ratio to the measured baseline
// (which a good kernel may beat). A size that did not run says why in
// place of its figures.
func benchTable(p *Problem, rs []Result) *Table {
	unit := rs[0].Unit
	t := &Table{
		Headers: []string{"variant", "size", "block", "time (µs)", unit, "% of peak", "× baseline", "memory held (MiB)"},
		Right:   []bool{false, false, true, true, true, true, true, true},
	}
	var peaks []string
	beat, best := 0, 0.0        // rows whose ratio shows above 1.00, and the highest
	rounds, ratioRounds := 0, 0 // the most rounds of a row, and of a ratio
	baseNote := ""
	for _, r := range rs {
		block := "—"
		if r.Block > 0 {
			block = fmt.Sprint(r.Block)
		}
		if !r.Measured() {
			mem := "—"
			if r.NeedMem > 0 {
				mem = fmt.Sprintf("needs %.1f", float64(r.NeedMem)/(1<<20))
			}
			t.add(r.Variant, r.Size, block, outcomeLabel(r), "—", "—", "—", mem)
			continue
		}
		if r.PeakName != "" {
			if note := fmt.Sprintf("peak: %.0f %s, the %s", r.Peak, unit, r.PeakName); !slices.Contains(peaks, note) {
				peaks = append(peaks, note)
			}
		}
		rounds = max(rounds, len(r.Rounds))
		times := "—"
		if b, ok := baseline(p, rs, r); ok {
			q := RatioOf(r, b)
			times, ratioRounds = q.String(), max(ratioRounds, q.Rounds)
			if q.Median >= 1.005 { // shows as 1.01 or more
				beat++
				best = max(best, q.Median)
			}
			if baseNote == "" {
				baseNote = "baseline: " + b.Variant
				switch {
				case p.Ceiling != "" && len(b.Rounds) > 1:
					baseNote += fmt.Sprintf(", %.1f %s (the median of %d rounds), measured in the same run", b.Throughput, unit, len(b.Rounds))
				case p.Ceiling != "":
					baseNote += fmt.Sprintf(", %.1f %s, measured in the same run", b.Throughput, unit)
				default:
					baseNote += " at the same size, measured in the same run"
				}
			}
		}
		t.add(r.Variant, r.Size, block, fmt.Sprintf("%.1f", r.MedianMs*1e3), fmt.Sprintf("%.1f", r.Throughput),
			pct(r.OfPeak()), times, fmt.Sprintf("%.1f", float64(r.PeakMem)/(1<<20)))
	}
	if baseNote == "" { // no row has a baseline: leave the column out
		t.dropColumn(6)
	}
	t.Notes = append(t.Notes, peaks...)
	for _, r := range rs {
		if r.OfPeak() > 1 {
			t.Notes = append(t.Notes, fmt.Sprintf("%s at %s passes the GPU's peak, which cannot be: %s is wrong for this GPU", r.Variant, r.Size, PeakTable))
		}
	}
	if baseNote != "" {
		t.Notes = append(t.Notes, baseNote)
	}
	if rounds > 1 {
		note := fmt.Sprintf("measured in %d rounds, every point once a round in turn: time and %s are the median round's", rounds, unit)
		if ratioRounds > 1 {
			note += "; × baseline is the median of the ratios within each round, the lowest and highest in brackets"
		}
		t.Notes = append(t.Notes, note)
	}
	if beat > 0 {
		upTo := "up to "
		if beat == 1 {
			upTo = ""
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%d of these %s the baseline, at %s%.2f×: a baseline is what this GPU reaches another way, not a limit; the peak is the limit.",
			beat, Plural(beat, "beats|beat"), upTo, best))
	}
	t.Notes = append(t.Notes, whyNotRun(rs)...)
	return t
}

// baseline is the measured baseline r is compared with: the copy measured
// in the same run (in the same rounds) for a memory-bound problem, else
// p's library impl at r's size. ok is false where there is none (the
// library impl itself, or a size the library did not run).
func baseline(p *Problem, rs []Result, r Result) (b Result, ok bool) {
	if p.Ceiling != "" && r.Ceiling > 0 {
		return ceilingOf(r), true
	}
	if p.Baseline == "" || r.Variant == p.Baseline {
		return Result{}, false
	}
	for _, b := range rs {
		if b.Variant == p.Baseline && b.Size == r.Size && b.Measured() {
			return b, true
		}
	}
	return Result{}, false
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
		g := &group{reason: firstLine(r.Detail)}
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
			out = append(out, fmt.Sprintf("%s at %s: %s", g.head, sizeList(g.sizes), g.reason))
		default:
			out = append(out, g.head+": "+g.reason)
		}
	}
	return out
}

// checkTable lists check results. Rows that measured nothing (refused,
// out of memory, timed out, faulted or skipped) show no error figures.
func checkTable(rs []Result) *Table {
	t := &Table{Headers: []string{"variant", "size", "max rel. error", "tolerance", "result"}, Right: []bool{false, false, true, true, false}}
	for _, r := range rs {
		errCell, tolCell := "—", "—"
		if r.Outcome == "" && r.Tolerance > 0 {
			errCell, tolCell = relErr(r.MaxRelErr), fmt.Sprintf("%.0e", r.Tolerance)
		}
		t.add(r.Variant, r.Size, errCell, tolCell, outcomeLabel(r))
	}
	t.Notes = whyNotRun(rs)
	return t
}

// relErr writes a relative error; an output that held NaN or an infinity
// reads "not finite", as the check's message says.
func relErr(e float64) string {
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return "not finite"
	}
	return fmt.Sprintf("%.1e", e)
}

// foldAt is how many check rows a table holds before a run that passed
// throughout is shown as one line instead.
const foldAt = 12

// showChecks shows the checks rs of problem p: as a table, or where there
// are many of several versions and none failed, as one summary line with
// the reasons for the sizes that did not run, and the command that lists
// one version's checks where the output is read (View.OneVersion).
func (e *Env) showChecks(p *Problem, rs []Result) {
	failed, variants, worst := false, []string{}, Result{}
	for _, r := range rs {
		failed = failed || r.Failed()
		if !slices.Contains(variants, r.Variant) {
			variants = append(variants, r.Variant)
		}
		if r.Outcome == "" && r.Tolerance > 0 && (worst.Tolerance == 0 || r.MaxRelErr/r.Tolerance > worst.MaxRelErr/worst.Tolerance) {
			worst = r
		}
	}
	if failed || len(rs) <= foldAt || len(variants) == 1 {
		e.PrintTable(checkTable(rs))
		return
	}
	ran := 0
	for _, r := range rs {
		if r.Outcome == "" {
			ran++
		}
	}
	e.printf("%d of %d checks ran (%s), and every one passed", ran, len(rs), Count(len(variants), "version"))
	if worst.Tolerance > 0 {
		// The variant last: a name such as "chain (lesson 13)" or
		// "launches, each synchronised" reads as it is there.
		e.printf(": the worst relative error, %s (tolerance %.0e), is at %s, in %s", relErr(worst.MaxRelErr), worst.Tolerance, worst.Size, worst.Variant)
	}
	if e.OneVersion != nil {
		e.printf(". '%s' lists one version's checks", e.OneVersion(rs[0].Lesson, variants[0]))
	}
	e.printf(".\n")
	for _, n := range whyNotRun(rs) {
		e.printf("%s\n", n)
	}
}

func pct(f float64) string {
	if f == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*f)
}

// sizeList joins sizes with commas, or with semicolons where a size has a
// comma of its own ("B=1 H=4 S=3 d=64, causal").
func sizeList(sizes []string) string {
	for _, s := range sizes {
		if strings.Contains(s, ",") {
			return strings.Join(sizes, "; ")
		}
	}
	return strings.Join(sizes, ", ")
}

// Count writes n and noun, the noun as n of it reads: "1 version",
// "3 versions", "2 batches" (Plural).
func Count(n int, noun string) string { return fmt.Sprintf("%d %s", n, Plural(n, noun)) }

// Plural is word as it reads beside n: itself where n is 1, else its
// plural. A word whose plural is not made by adding s or es (or y → ies)
// is given as "one|many": Plural(n, "needs|need"), Plural(n, "is|are").
// In a phrase, the last word takes the plural: "planted kernel" →
// "planted kernels".
func Plural(n int, word string) string {
	if one, many, ok := strings.Cut(word, "|"); ok {
		if n == 1 {
			return one
		}
		return many
	}
	if n == 1 {
		return word
	}
	switch {
	case strings.HasSuffix(word, "s"), strings.HasSuffix(word, "x"), strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "sh"):
		return word + "es"
	case strings.HasSuffix(word, "y") && len(word) > 1 && !strings.ContainsRune("aeiou", rune(word[len(word)-2])):
		return word[:len(word)-1] + "ies"
	}
	return word + "s"
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
