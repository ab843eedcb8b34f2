package gpu

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// GPULockEnv names the variable that says where timed regions take turns:
// a folder that every user of the GPU can write (chmod 1777), holding one
// lock file per GPU; "off" for none. Unset, DefaultGPULockDir.
//
// Learners who share a GPU would time each other's kernels as well as
// their own, so a measurement (Bench) takes the GPU's lock, host-wide,
// for its warm-up and timed repetitions; checks and other work do not,
// and run side by side. The lock is flock(2) on the file, which the
// kernel releases when its holder exits, however it ends.
const GPULockEnv = "CUDAREPL_GPU_LOCK"

// DefaultGPULockDir is where the GPUs' lock files are without GPULockEnv:
// the same folder for every user of the host.
const DefaultGPULockDir = "/tmp/cudarepl-gpu-locks"

// WaitingMessage is what a measurement says, once, when it must wait for
// another process's timing to end.
const WaitingMessage = "gpu: waiting for the GPU (another learner is timing)"

// The waiting side of the lock, variables so that tests can shorten them.
var (
	// lockBeat is how often a measurement that waits for the lock reports
	// progress (none done), so that the worker's time limit, which counts
	// from the last report, runs only while it runs.
	lockBeat = time.Second
	// lockWaitMax is how long a measurement waits for the lock before it
	// gives up with an error that names the lock file.
	lockWaitMax = 10 * time.Minute
	// lockOut receives the waiting message and warnings: the worker's
	// standard error, which its parent shows the learner.
	lockOut io.Writer = os.Stderr
)

// gpuLockPath is the lock file of the GPU at PCI address pci ("" where
// unknown) under the setting of GPULockEnv; "" where the setting is "off".
func gpuLockPath(setting, pci string) string {
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "off", "none", "0":
		return ""
	case "":
		setting = DefaultGPULockDir
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

// warnedLocks are the lock files this process could not use and has said
// so about, once each.
var warnedLocks sync.Map

// timed runs f, the timed part of measurement name, holding the lock of
// the GPU at PCI address pci: no other process's timed part on that GPU
// runs meanwhile. While it waits it says so once (WaitingMessage) and
// calls beat every lockBeat. A lock it cannot open is said once a process,
// and f runs without it; a wait longer than lockWaitMax is an error.
func timed(name, pci string, beat func(), f func() error) error {
	path := gpuLockPath(os.Getenv(GPULockEnv), pci)
	if path == "" {
		return f()
	}
	unlock, err := lockFile(path, func() { fmt.Fprintln(lockOut, WaitingMessage) }, beat, lockWaitMax)
	switch {
	case err == errLockWait:
		return fmt.Errorf("gpu: %s: waited %s for the GPU, whose lock %s another process holds all that time; try again later, or ask who holds it (lslocks)",
			name, lockWaitMax, path)
	case err != nil:
		if _, said := warnedLocks.LoadOrStore(path, true); !said {
			fmt.Fprintf(lockOut, "gpu: timing without the GPU's lock, so other learners' timings may overlap yours: %v; set %s to a folder every learner can write (chmod 1777)\n",
				err, GPULockEnv)
		}
		return f()
	}
	defer unlock()
	return f()
}
