package share

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// LockEnv names the variable that says where timed regions take turns: a
// folder that every user of the GPU can write (chmod 1777), holding one
// lock file per GPU; "off" for none. Unset, DefaultLockDir.
//
// Learners who share a GPU would time each other's kernels as well as
// their own, so a measurement (gpu.Bench) takes the GPU's lock, host-wide,
// for its warm-up and timed repetitions; checks and other work do not,
// and run side by side. The lock is flock(2) on the file, which the
// kernel releases when its holder exits, however it ends.
const LockEnv = "CUDAREPL_GPU_LOCK"

// DefaultLockDir is where the GPUs' lock files are without LockEnv: the
// same folder for every user of the host.
const DefaultLockDir = "/tmp/cudarepl-gpu-locks"

// WaitingMessage is what a measurement says, once, when it must wait for
// another process's timing to end.
const WaitingMessage = "gpu: waiting for the GPU (another learner is timing)"

// Lock takes the host-wide locks of the GPUs for timed regions, as one
// process does: it says once per lock file that it cannot use one. A Lock
// must not be copied after first use.
type Lock struct {
	// Out receives the waiting message and warnings: the worker's standard
	// error, which its parent shows the learner; os.Stderr when nil.
	Out io.Writer
	// Beat is how often a region that waits for the lock reports progress
	// (none done), so that the worker's time limit, which counts from the
	// last report, runs only while it runs; a second when 0.
	Beat time.Duration
	// Wait is how long a region waits for the lock before it gives up
	// with an error that names the lock file; 10 minutes when 0.
	Wait time.Duration

	warned sync.Map // the lock files this Lock could not use and has said so about
}

// lockPath is the lock file of the GPU at PCI address pci ("" where
// unknown) under the setting of LockEnv; "" where the setting is "off".
func lockPath(setting, pci string) string {
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "off", "none", "0":
		return ""
	case "":
		setting = DefaultLockDir
	}
	if pci == "" {
		pci = "unknown"
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, strings.ToLower(pci))
	return filepath.Join(setting, "gpu-"+name+".lock")
}

// errLockWait is lockFile's error when the wait passed its limit.
var errLockWait = errors.New("gpu: waited too long for the lock")

// Timed runs f, the timed part of measurement name, holding the lock of
// the GPU at PCI address pci, in the folder LockEnv names: no other
// process's timed part on that GPU runs meanwhile. While it waits it says
// so once (WaitingMessage) and calls beat every Beat. A lock it cannot
// open is said once, and f runs without it; a wait longer than Wait is an
// error.
func (l *Lock) Timed(name, pci string, beat func(), f func() error) error {
	path := lockPath(os.Getenv(LockEnv), pci)
	if path == "" {
		return f()
	}
	out, every, wait := l.Out, l.Beat, l.Wait
	if out == nil {
		out = os.Stderr
	}
	if every <= 0 {
		every = time.Second
	}
	if wait <= 0 {
		wait = 10 * time.Minute
	}
	unlock, err := lockFile(path, func() { fmt.Fprintln(out, WaitingMessage) }, beat, every, wait)
	switch {
	case err == errLockWait:
		return fmt.Errorf("gpu: %s: waited %s for the GPU, whose lock %s another process holds all that time; try again later, or ask who holds it (lslocks)",
			name, wait, path)
	case err != nil:
		if _, said := l.warned.LoadOrStore(path, true); !said {
			fmt.Fprintf(out, "gpu: timing without the GPU's lock, so other learners' timings may overlap yours: %v; set %s to a folder every learner can write (chmod 1777)\n",
				err, LockEnv)
		}
		return f()
	}
	defer unlock()
	return f()
}
