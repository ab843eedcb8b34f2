package lessons

import (
	"errors"
	"fmt"

	"cudarepl/gpu"
)

// SanitizerTools are the compute-sanitizer tools Sanitize can run checks
// under: memcheck (out-of-bounds and misaligned accesses), racecheck
// (shared-memory hazards), synccheck (barriers misused) and initcheck
// (reads of memory never written).
var SanitizerTools = gpu.SanitizerTools

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
	w, err := gpu.Open(gpu.Options{Sanitizer: tool, Stderr: e.stderr, Timeout: e.timeout})
	if err != nil {
		return err
	}
	defer w.Close()
	sub := &Env{Dev: w, Out: e.Out, Ctx: e.Ctx, PlotDir: e.PlotDir, Workspace: e.Workspace, Width: e.Width,
		Progress: e.Progress, ShowTable: e.ShowTable, ShowFigure: e.ShowFigure, images: e.images, noted: e.noted,
		timeout: e.timeout, stderr: e.stderr}
	e.printf("Under compute-sanitizer %s: every kernel runs instrumented, tens of times slower.\n", tool)
	runErr := fn(sub)
	findings, err := w.SanitizerReport()
	if err != nil {
		return errors.Join(runErr, err)
	}
	if len(findings) == 0 {
		e.printf("compute-sanitizer %s: no errors found.\n", tool)
		return runErr
	}
	e.printf("compute-sanitizer %s found %d kind(s) of error:\n", tool, len(findings))
	for _, f := range findings {
		e.printf("  %s\n", f)
	}
	found := fmt.Errorf("compute-sanitizer %s found %s", tool, findings[0])
	if runErr != nil {
		return errors.Join(runErr, found)
	}
	return found
}
