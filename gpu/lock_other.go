//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gpu

import (
	"errors"
	"time"
)

// errLockWait is lockFile's error when the wait passed its limit.
var errLockWait = errors.New("gpu: waited too long for the lock")

// lockFile: without flock(2) there is no host-wide lock; timed says so
// once and times without it. No NVIDIA driver that cudarepl loads runs
// here, so nothing is timed here either.
func lockFile(path string, waiting, beat func(), max time.Duration) (unlock func(), err error) {
	return nil, errors.New("this system has no flock(2)")
}
