package lessons

import (
	"bytes"
	"strings"
	"testing"
)

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		word string
		want string
	}{
		{1, "version", "version"},
		{2, "version", "versions"},
		{0, "stream", "streams"},
		{1, "planted kernel", "planted kernel"},
		{11, "planted kernel", "planted kernels"},
		{2, "batch", "batches"},
		{3, "pass", "passes"},
		{2, "copy", "copies"},
		{2, "day", "days"},
		{1, "needs|need", "needs"},
		{2, "needs|need", "need"},
	} {
		if got := Plural(tt.n, tt.word); got != tt.want {
			t.Errorf("Plural(%d, %q) = %q; want %q", tt.n, tt.word, got, tt.want)
		}
	}
	if got, want := Count(1, "test"), "1 test"; got != want {
		t.Errorf("Count(1, %q) = %q; want %q", "test", got, want)
	}
}

// TestCheckSummaryGrammar: the folded summary of many checks reads well
// for any variant name, with the variant after its size rather than in a
// possessive ("is launches's", "chain (lesson 13)'s").
func TestCheckSummaryGrammar(t *testing.T) {
	for _, tt := range []struct {
		worst string // the variant with the worst error
		want  string
	}{
		{"launches", "the worst relative error, 4.0e-06 (tolerance 1e-05), is at n=7, in launches.\n"},
		{"chain (lesson 13)", "is at n=7, in chain (lesson 13).\n"},
		{"three kernels", "is at n=7, in three kernels.\n"},
	} {
		var rs []Result
		for _, v := range []string{"a", "b", tt.worst} {
			for n := range 5 {
				r := Result{Lesson: "l", Variant: v, Size: "n=" + string(rune('3'+n)), MaxRelErr: 1e-7, Tolerance: 1e-5, Passed: true}
				if v == tt.worst && n == 4 {
					r.MaxRelErr = 4e-6
				}
				rs = append(rs, r)
			}
		}
		var out bytes.Buffer
		env := Replay(nil, View{Out: &out})
		env.showChecks(&Problem{Name: "p"}, rs)
		got := out.String()
		if !strings.Contains(got, "15 of 15 checks ran (3 versions), and every one passed") || !strings.Contains(got, tt.want) {
			t.Errorf("summary with %q worst = %q; want it to contain %q", tt.worst, got, tt.want)
		}
		if strings.Contains(got, "'s at") {
			t.Errorf("summary with %q worst has a possessive: %q", tt.worst, got)
		}
	}
}

// TestBeatNote: the note under a bench table counts the rows whose ratio
// shows above 1.00, in the × the column uses, with the verb agreeing.
func TestBeatNote(t *testing.T) {
	p := &Problem{Name: "p", Unit: "GB/s", Baseline: "lib"}
	row := func(v string, tput float64) Result {
		return Result{Variant: v, Size: "n=1", MedianMs: 1, Throughput: tput, Unit: "GB/s"}
	}
	for _, tt := range []struct {
		rs   []Result
		want string // "" for no note
	}{
		{[]Result{row("lib", 100), row("a", 100.2), row("b", 100.4)}, ""}, // 1.00 in the table: not beating it
		{[]Result{row("lib", 100), row("a", 103)}, "1 of these beats the baseline, at 1.03×:"},
		{[]Result{row("lib", 100), row("a", 103), row("b", 110)}, "2 of these beat the baseline, at up to 1.10×:"},
	} {
		var b bytes.Buffer
		benchTable(p, tt.rs).Write(&b)
		got := b.String()
		switch {
		case tt.want == "" && strings.Contains(got, "the baseline, at"):
			t.Errorf("table notes a row beating the baseline:\n%s", got)
		case tt.want != "" && !strings.Contains(got, tt.want):
			t.Errorf("table lacks %q:\n%s", tt.want, got)
		}
	}
}

func TestWhyNotRunSizes(t *testing.T) {
	rs := []Result{
		{Variant: "v1", Size: "S=3, causal", Outcome: Refused, Detail: "not causal"},
		{Variant: "v1", Size: "S=100, causal", Outcome: Refused, Detail: "not causal"},
	}
	if got, want := whyNotRun(rs), "v1 refused at S=3, causal; S=100, causal: not causal"; len(got) != 1 || got[0] != want {
		t.Errorf("whyNotRun = %q; want [%q]", got, want)
	}
}
