package lessons

import (
	"errors"
	"fmt"

	"cudarepl/gpu/sanitizer"
)

// sanitizerWork bounds the work of a check run under each
// compute-sanitizer tool, which makes kernels tens (memcheck) to thousands
// (racecheck: more than two minutes for a 1000×1003×517 product) of times
// slower: larger check sizes are skipped, as long as a smaller one runs
// the same code. memcheck runs every check size of the course.
var sanitizerWork = map[string]float64{"memcheck": 2e9, "racecheck": 5e7, "synccheck": 5e7, "initcheck": 5e7}

// sanitizerSizes marks which of p's check sizes impl is checked at under
// the sanitizer: those within sanitizerWork, or where none of those can
// run, the smallest that can.
func (e *Env) sanitizerSizes(p *Problem, impl Impl) map[string]bool {
	run := map[string]bool{}
	var smallest Size
	for _, s := range p.CheckSizes {
		if p.launchAs(impl).refuses(e, s) != nil {
			continue
		}
		if p.Work(s) <= sanitizerWork[e.sanitizing] {
			run[s.String()] = true
		}
		if smallest == nil || p.Work(s) < p.Work(smallest) {
			smallest = s
		}
	}
	if len(run) == 0 && smallest != nil {
		run[smallest.String()] = true
	}
	return run
}

// SanitizerError is what compute-sanitizer found: its Error is one short
// line, the findings having been printed one a line.
type SanitizerError struct {
	Tool     string
	Findings []sanitizer.Finding
}

func (e *SanitizerError) Error() string {
	return fmt.Sprintf("compute-sanitizer %s found %s (listed above)", e.Tool, e.kinds())
}

func (e *SanitizerError) kinds() string {
	if len(e.Findings) == 1 {
		return "1 kind of error"
	}
	return fmt.Sprintf("%d kinds of error", len(e.Findings))
}

// SanitizerTools are the compute-sanitizer tools Sanitize can run checks
// under: memcheck (out-of-bounds and misaligned accesses), racecheck
// (shared-memory hazards), synccheck (barriers misused) and initcheck
// (reads of memory never written).
var SanitizerTools = sanitizer.Tools

// Sanitize runs fn in an Env whose GPU worker runs under compute-sanitizer's
// tool, then prints what the sanitizer found, one line per kind of error
// and kernel (with the first thread, block and address), and returns an
// error when it found anything or fn failed. compute-sanitizer cannot see
// a kernel that runs in a worker when it is wrapped around the program
// that starts the worker; this starts the worker itself under it.
func (e *Env) Sanitize(tool string, fn func(env *Env) error) error {
	if !e.Live() {
		return fmt.Errorf("compute-sanitizer checks kernels as they run on a GPU, and there is none here (%v)", e.NoGPU)
	}
	wrap, err := sanitizer.Wrapper(tool)
	if err != nil {
		return err
	}
	sub, w, err := e.wrapped(wrap)
	if err != nil {
		return err
	}
	defer w.Close()
	sub.sanitizing = tool
	e.printf("Under compute-sanitizer %s: every kernel runs instrumented, tens of times slower.\n", tool)
	runErr := fn(sub)
	findings, err := sanitizer.Report(w, tool)
	if err != nil {
		return errors.Join(runErr, err)
	}
	if len(findings) == 0 {
		e.printf("compute-sanitizer %s: no errors found.\n", tool)
		return runErr
	}
	found := &SanitizerError{Tool: tool, Findings: findings}
	e.printf("compute-sanitizer %s found %s:\n", tool, found.kinds())
	for _, f := range findings {
		e.printf("  %s\n", f)
	}
	if runErr != nil {
		return errors.Join(runErr, found)
	}
	return found
}
