package transfers

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
	"cudarepl/plots"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestBytesLabel(t *testing.T) {
	for b, want := range map[int64]string{4 << 10: "4 KiB", 1 << 30: "1 GiB", 256 << 20: "256 MiB", 4112: "4112 B", 4: "4 B"} {
		if got := bytesLabel(b); got != want {
			t.Errorf("bytesLabel(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestSpanKind(t *testing.T) {
	for op, want := range map[string]string{"copy host→device": "copy in", "copy device→host": "copy out", "work": "compute", "record event 1": ""} {
		if got := spanKind(op); got != want {
			t.Errorf("spanKind(%q) = %q, want %q", op, got, want)
		}
	}
}

// TestShowEarly renders the race step from fixed results: what each read
// found, and a failure where y is wrong after the wait.
func TestShowEarly(t *testing.T) {
	unwritten := "check: y[67108862] = NaN, want 1.0001; 2 of 67108864 differ"
	rs := func(late string) []lessons.Result {
		return []lessons.Result{
			{Variant: enqueued, MedianMs: 0.4, Passed: true},
			{Variant: readEarly, MedianMs: 300, Detail: unwritten},
			{Variant: waited, MedianMs: 0.1, Passed: true},
			{Variant: readLate, MedianMs: 300, Passed: late == "", Detail: late},
		}
	}
	var out bytes.Buffer
	env := lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out, Width: 100})
	if err := showEarly(env, rs("")); err != nil {
		t.Fatalf("y complete after the wait: %v", err)
	}
	for _, want := range []string{unwritten, "passes the check", "300.000", "0.400"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := showEarly(env, rs(unwritten)); err == nil || !strings.Contains(err.Error(), "after waiting for the streams: "+unwritten) {
		t.Errorf("y wrong after the wait: %v, want it named", err)
	}
}

// TestOneStream: one stream is counted in the singular, in a pipeline's
// size and in what a schedule says it does.
func TestOneStream(t *testing.T) {
	p := pipelineProblem()
	for _, tc := range []struct {
		size lessons.Size
		want string
	}{
		{lessons.Size{pipeN, 1}, "n=67108864, 1 stream"},
		{lessons.Size{pipeN, 4}, "n=67108864, 4 streams"},
		{lessons.Size{pipeN, 1, 1000}, "n=67108864, 1 stream, 1000 rounds"},
	} {
		if got := p.SizeLabel(tc.size); got != tc.want {
			t.Errorf("SizeLabel(%v) = %q, want %q", tc.size, got, tc.want)
		}
	}
	for _, tc := range []struct{ on, want string }{{"1", "on stream 1;"}, {"1 + c%2", "on streams 1, 2;"}} {
		sc, err := parseSchedule("chunks 4\nhost pinned\nrecord 0\nfor c in 0..chunks {\non " + tc.on + ": wait 0\non " + tc.on + ": in c\non " + tc.on + ": work c\non " + tc.on + ": out c\n}\n")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sc.String(), tc.want) {
			t.Errorf("schedule on %s says %q, want %q", tc.on, sc.String(), tc.want)
		}
	}
	l, err := lessons.Find("transfers")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Recorded().Results {
		if strings.Contains(r.Size, "1 streams") {
			t.Errorf("%s %s: recorded as %q", r.Step, r.Variant, r.Size)
		}
	}
}

// TestLinkLineMatchesTheProse: the Copies by size step and its figure say
// the same of the link's rate: a dotted black line (a limit, ┈ in the
// terminal), its generation and width read from sysfs, as the link step
// reads them; and the copies, all driver calls and none a baseline beside
// kernels, are drawn as solid lines, pinned and mapped alike in nothing.
func TestLinkLineMatchesTheProse(t *testing.T) {
	l, err := lessons.Find("transfers")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	var figs []plots.Figure
	env.ShowFigure = func(f plots.Figure) error { figs = append(figs, f); return nil }
	for i, s := range l.Steps {
		if s.Title != "Copies by size" {
			continue
		}
		if !strings.Contains(s.Prose, "dotted black line is the link's nominal") || !strings.Contains(s.Prose, "sysfs") || strings.Contains(s.Prose, "red line") {
			t.Errorf("the step's prose does not describe the line as drawn:\n%s", s.Prose)
		}
		if err := l.RunStep(env, i); err != nil {
			t.Fatal(err)
		}
	}
	if len(figs) != 1 {
		t.Fatalf("%d figures, want 1", len(figs))
	}
	fig := figs[0].(plots.Lines)
	if len(fig.Ceilings) != 1 || !fig.Ceilings[0].Peak || !strings.Contains(fig.Ceilings[0].Name, "read from sysfs") {
		t.Errorf("the link's line: %+v, want a limit (dotted) saying it comes from sysfs", fig.Ceilings)
	}
	var pinned, mappedLook *plots.Style
	for _, se := range fig.Series {
		if se.Baseline {
			t.Errorf("%s is drawn as a baseline (dashed)", se.Name)
		}
		switch se.Name {
		case h2dPinned:
			pinned = se.Style
		case mapped:
			mappedLook = se.Style
		}
	}
	if pinned == nil || mappedLook == nil || pinned.Colour == mappedLook.Colour || pinned.Marker == mappedLook.Marker {
		t.Errorf("pinned %+v and mapped %+v look alike", pinned, mappedLook)
	}
}
