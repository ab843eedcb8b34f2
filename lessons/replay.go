package lessons

import (
	"encoding/json"
	"fmt"

	"cudarepl/gpu"
)

// What a step shows comes from one of two places: measured on this
// session's GPU, or, without one, recorded with the lesson on a reference
// GPU (replay). LiveOr decides which, and nothing else does: the actions,
// and the lesson code through Measured, Device and Run.Replay, say what to
// do in each case and never ask which they are in.

// LiveOr returns what live measures on a GPU and, without one, what
// replay shows of the results recorded with the lesson (having said that
// they are replayed, or that none were recorded).
func (e *Env) LiveOr(live, replay func() ([]Result, error)) ([]Result, error) {
	if e.Live() {
		return live()
	}
	return replay()
}

// Measured returns what live measures on a GPU; without one, the results
// recorded for step, saying where they come from. ok is false when there
// is nothing to show (live failed, or nothing was recorded).
func (e *Env) Measured(l *Lesson, step string, live func() ([]Result, error)) (rs []Result, ok bool, err error) {
	rs, err = e.LiveOr(live, func() ([]Result, error) { return e.replayed(l, step), nil })
	return rs, err == nil && len(rs) > 0, err
}

// replayed returns the bench results recorded for step, or says that
// there are none. Why there is no GPU is said once a session, before the
// first results replayed (ReplayNotice): every table and figure of them
// says where they come from ("replayed from NVIDIA H100 80GB HBM3,
// 2026-11-23"), so a learner reading any one step knows what it shows,
// and a run of a whole lesson does not repeat the reason at every step.
func (e *Env) replayed(l *Lesson, step string) []Result {
	rs := l.recorded.Filter(step, "bench")
	if len(rs) == 0 {
		e.printf("No GPU here, and no results were recorded for this step.\n")
		return nil
	}
	e.ReplayNotice()
	return rs
}

// ReplayNotice says, once a session, that there is no GPU and why, and
// that what the steps show was recorded on a reference GPU: a step that
// shows recorded results calls it before them, and says in its table
// which GPU and day they come from (ResultSet.Source).
func (e *Env) ReplayNotice() {
	if e.once(replayNoteKey) {
		e.printf("No GPU here (%v): the steps show results recorded on a reference GPU; each table says which GPU, and when.\n", e.NoGPU)
	}
}

// replayNoteKey is what once remembers that why there is no GPU was said
// under: one key for every notice of replay, so that the reason is said
// once a session whichever step says it first.
const replayNoteKey = "replay note"

// Device returns the GPU's description: read live, or from the results
// recorded with the lesson in replay (ok false where none were). source
// is "live", or says where it was recorded.
func (e *Env) Device(l *Lesson, step string) (info gpu.DeviceInfo, source string, ok bool) {
	rs, _ := e.LiveOr(func() ([]Result, error) {
		info = e.Dev.Info()
		b, _ := json.Marshal(info)
		return []Result{e.Record(Result{Lesson: l.Slug, Step: step, Kind: "device", Variant: info.Name, Detail: string(b)})}, nil
	}, func() ([]Result, error) {
		for _, r := range l.recorded.Results {
			if r.Kind == "device" && json.Unmarshal([]byte(r.Detail), &info) == nil {
				return []Result{r}, nil
			}
		}
		return nil, nil
	})
	switch {
	case len(rs) == 0:
		return info, "", false
	case rs[0].Mode == "live":
		return info, "live", true
	}
	return info, ResultSet{Results: rs}.Source(), true
}

// Latest returns the results of the step whose action is a (given to the
// Def as a pointer): this session's, or where there are none the lesson's
// recorded ones. A sweep's and a measuring run's results are its
// measurements, a check step's its checks.
func (e *Env) Latest(l *Lesson, a Action) []Result {
	step, err := l.stepTitle(a)
	if err != nil {
		panic(err) // a lesson that names a step it does not have: any test of it finds this
	}
	return e.latest(l, step, recordsOf(a))
}

// latest is Latest by the step's title and the results' kind.
func (e *Env) latest(l *Lesson, step, kind string) []Result {
	if rs := e.Results.Filter(step, kind); len(rs) > 0 {
		return rs
	}
	return l.recorded.Filter(step, kind)
}

// About says where results another step measured come from, for a table
// that reads them: this session's; or, where this session has not measured
// them, the ones recorded with the lesson, saying so plainly, and from
// which GPU and day.
func (e *Env) About(rs []Result) string {
	src := ResultSet{Results: rs}.Source()
	if len(rs) == 0 || rs[0].Mode == "live" || !e.Live() {
		return src
	}
	return fmt.Sprintf("recorded on %s, %s, with the lesson: this session has not measured them yet", rs[0].GPU, rs[0].Date)
}
