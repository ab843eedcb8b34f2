package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Wrapper starts each worker process under another program that runs it as
// its child, with the worker's pipes (fds 3 and 4) passed on: a
// compute-sanitizer tool, a profiler. It is the one seam such tools plug
// into; package gpu/sanitizer makes the compute-sanitizer ones. With a
// Transport (Options.Remote), the wrapper runs on the worker's host,
// around the worker there: its program is looked for there (where the
// path in Argv is not on that host, by its name, as dl.Tool looks), its
// logs are written there and sent back as each worker ends.
type Wrapper struct {
	// Name names the wrapper in messages, e.g. "compute-sanitizer memcheck".
	Name string
	// Argv is the command line put in front of the worker's own. Any
	// argument holding LogDir has it replaced by a fresh folder, kept for
	// the Worker's life, where the wrapper writes its logs (one file per
	// worker process: a fault ends a worker and starts another).
	Argv []string
	// Slowdown, above 1, multiplies the time limit of each call (to two
	// minutes at least): work under a wrapper runs many times slower.
	Slowdown int
}

// LogDir stands in a Wrapper's Argv for the folder its logs go to.
const LogDir = "{logdir}"

// LogStart stands in a Wrapper's Argv for the number of the worker process
// it starts (001, 002, … in the order they start), for a wrapper that
// cannot name its log after its process (ncu's --log-file takes no %p): a
// worker started again after a fault then writes a log of its own.
const LogStart = "{start}"

// Command returns the wrapper's command line around the worker exe, with
// LogDir and LogStart filled in: the log folder, and n, the number of the
// worker process.
func (wr *Wrapper) Command(exe, logDir string, n int) []string {
	argv := append(slices.Clone(wr.Argv), exe)
	for i, a := range argv {
		a = strings.ReplaceAll(a, LogDir, logDir)
		argv[i] = strings.ReplaceAll(a, LogStart, fmt.Sprintf("%03d", n))
	}
	return argv
}

// WrapperLogs stops the worker, so that the wrapper around it finishes
// writing, and returns what it wrote in the log folder since the last call,
// one string a file in the order of their names (for a remote worker: in
// the order its hosts sent them); the files are removed.
// The next call starts a fresh worker. Without a wrapper it returns
// nothing.
func (w *Worker) WrapperLogs() ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.opts.Wrap == nil {
		return nil, nil
	}
	if w.p != nil {
		w.p.stopWithin(30 * time.Second)
		w.p = nil
		w.forget()
	}
	if w.opts.Remote != nil { // each worker's host sent its logs as the worker ended
		w.logsMu.Lock()
		defer w.logsMu.Unlock()
		out := w.remoteLogs
		w.remoteLogs = nil
		return out, nil
	}
	paths, _ := filepath.Glob(filepath.Join(w.logDir, "*"))
	sort.Strings(paths)
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return out, fmt.Errorf("gpu: %s's log: %w", w.opts.Wrap.Name, err)
		}
		out = append(out, string(b))
		os.Remove(p)
	}
	return out, nil
}
