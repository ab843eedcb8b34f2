package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLiveOrDecides: on a GPU the live side of every step runs and in
// replay the recorded side, decided by LiveOr alone: a Run with a Replay,
// Measured, Device and LiveOr itself.
func TestLiveOrDecides(t *testing.T) {
	device := `{"lesson":"x","step":"A","kind":"device","variant":"Reference GPU","size":"","dims":null,"dtype":"","detail":"{\"Name\":\"Reference GPU\"}","gpu":"Reference GPU","driver":"","cuda":"","date":"2026-11-22","mode":"live"}`
	bench := `{"lesson":"x","step":"A","kind":"bench","variant":"recorded","size":"n=1","dims":[1],"dtype":"float32","gpu":"Reference GPU","driver":"","cuda":"","date":"2026-11-22","mode":"live"}`
	l, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n")},
		"results/r.json": {Data: []byte(`{"schema":"cudarepl-results/1","results":[` + device + "," + bench + `]}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc   string
		env    func(out *bytes.Buffer) *Env
		want   string // which side ran
		device string // the device's name and where it comes from
		says   string // part of what the env printed
	}{
		{"on a GPU", func(out *bytes.Buffer) *Env { return liveEnv(&fakeDev{}, View{Out: out}) }, "live", "Fake GPU, live", ""},
		{"in replay", func(out *bytes.Buffer) *Env { return Replay(errors.New("no GPU"), View{Out: out}) }, "replay",
			"Reference GPU, replayed from Reference GPU, 2026-11-22", "No GPU here (no GPU): the steps show results recorded on a reference GPU"},
	} {
		var out bytes.Buffer
		env := tt.env(&out)
		var ran []string
		run := &Run{F: func(*Env, *Lesson, string) error { ran = append(ran, "live"); return nil },
			Replay: func(*Env, *Lesson, string) error { ran = append(ran, "replay"); return nil }}
		if err := run.Do(env, l, "A"); err != nil {
			t.Errorf("%s: Run.Do = %v", tt.desc, err)
		}
		rs, ok, err := env.Measured(l, "A", func() ([]Result, error) { return []Result{{Variant: "live"}}, nil })
		if err != nil || !ok || len(rs) != 1 {
			t.Errorf("%s: Measured = %v, %v, %v", tt.desc, rs, ok, err)
		} else if rs[0].Variant == "live" {
			ran = append(ran, "live")
		} else {
			ran = append(ran, "replay")
		}
		rs, err = env.LiveOr(func() ([]Result, error) { return []Result{{Variant: "live"}}, nil },
			func() ([]Result, error) { return []Result{{Variant: "replay"}}, nil })
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: LiveOr = %v, %v", tt.desc, rs, err)
		}
		ran = append(ran, rs[0].Variant)
		if want := strings.Repeat(tt.want+" ", 3); strings.Join(ran, " ")+" " != want {
			t.Errorf("%s: ran %v, want %s each time", tt.desc, ran, tt.want)
		}
		info, source, ok := env.Device(l, "A")
		if got := fmt.Sprintf("%s, %s", info.Name, source); !ok || got != tt.device {
			t.Errorf("%s: Device = %q, %v; want %q", tt.desc, got, ok, tt.device)
		}
		if !strings.Contains(out.String(), tt.says) {
			t.Errorf("%s: the env said\n%s\nwant it to say %q", tt.desc, out.String(), tt.says)
		}
	}
}

// TestReplayNoticeOnce: why there is no GPU is said before the first
// results replayed, and not again at every later step, whose tables say
// where their results come from; a step with nothing recorded says so
// each time.
func TestReplayNoticeOnce(t *testing.T) {
	bench := `{"lesson":"x","step":"%s","kind":"bench","variant":"v1","size":"n=1","dims":[1],"dtype":"float32","gpu":"Reference GPU","driver":"","cuda":"","date":"2026-11-22","mode":"live"}`
	l, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n\n## B\n\ntext\n\n## C\n\ntext\n")},
		"results/r.json": {Data: []byte(`{"schema":"cudarepl-results/1","results":[` + fmt.Sprintf(bench, "A") + "," + fmt.Sprintf(bench, "B") + `]}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := Replay(errors.New("no driver"), View{Out: &out})
	for _, step := range []string{"A", "B", "C", "C"} {
		env.replayed(l, step)
	}
	for _, tc := range []struct {
		says string
		want int
	}{
		{"No GPU here (no driver)", 1},
		{"No GPU here, and no results were recorded for this step.", 2},
	} {
		if got := strings.Count(out.String(), tc.says); got != tc.want {
			t.Errorf("said %q %d times, want %d:\n%s", tc.says, got, tc.want, out.String())
		}
	}
}
