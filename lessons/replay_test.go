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
			"Reference GPU, replayed from Reference GPU, 2026-11-22", "No GPU here (no GPU): showing results replayed from Reference GPU, 2026-11-22."},
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
