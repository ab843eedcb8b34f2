package lessons

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type stepsPlan struct{ steps int }

func (p *stepsPlan) String() string { return fmt.Sprintf("%d steps", p.steps) }

type otherPlan string

func (o otherPlan) String() string { return string(o) }

// TestPlansGiveThePlanBackTyped: a plan read by an exercise's Plans rides
// in the learner's impl, and in the impl it is launched as, to the case,
// which gets it back as the plan's own type from that Plans, and from no
// other; what the plan says of itself, and its Show, come with it.
func TestPlansGiveThePlanBackTyped(t *testing.T) {
	shown := 0
	steps := Plans[*stepsPlan]{
		Read: func(code string) (*stepsPlan, error) {
			if code == "" {
				return nil, errors.New("line 1: no steps")
			}
			return &stepsPlan{strings.Count(code, "\n")}, nil
		},
		Show: func(env *Env, l *Lesson, p *stepsPlan) error { shown = p.steps; return nil },
	}
	other := Plans[otherPlan]{Read: func(code string) (otherPlan, error) { return otherPlan(code), nil }}

	var x Planner = steps
	if _, err := x.read(""); err == nil || err.Error() != "line 1: no steps" {
		t.Errorf("read of a wrong plan = %v, want its error", err)
	}
	pl, err := x.read("in 0\nwork 0\nout 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if pl.String() != "3 steps" {
		t.Errorf("the plan says %q, want %q", pl, "3 steps")
	}
	p := &Problem{Impls: []Impl{{Name: "pipelined", Summary: "the course's"}}}
	mine := Impl{Name: "schedule", Like: "pipelined", plan: pl.Stringer, Library: true}
	for _, tt := range []struct {
		desc  string
		found func() (fmt.Stringer, bool)
		want  string // what the plan found says; "" for none found
	}{
		{"the learner's impl", func() (fmt.Stringer, bool) { return steps.In(mine) }, "3 steps"},
		{"the impl it is launched as", func() (fmt.Stringer, bool) { return steps.In(p.launchAs(mine)) }, "3 steps"},
		{"the course's own impl", func() (fmt.Stringer, bool) { return steps.In(p.Impls[0]) }, ""},
		{"another Plans", func() (fmt.Stringer, bool) { return other.In(mine) }, ""},
	} {
		got, ok := tt.found()
		switch {
		case ok != (tt.want != ""):
			t.Errorf("%s: In found %v, want %v", tt.desc, ok, tt.want != "")
		case ok && got.String() != tt.want:
			t.Errorf("%s: In = %q, want %q", tt.desc, got, tt.want)
		}
	}
	if like := p.launchAs(mine); like.Summary != "the course's" {
		t.Errorf("launchAs = %+v, want the course's pipelined carrying the plan", like)
	}
	if err := pl.show(nil, nil); err != nil || shown != 3 {
		t.Errorf("show = %v, showed a plan of %d steps; want the plan read", err, shown)
	}
	if pl, _ := other.read("x"); pl.show != nil {
		t.Error("a Plans without Show shows something")
	}
}
