//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package share

import (
	"errors"
	"time"
)

// lockFile: without flock(2) there is no host-wide lock; Timed says so
// once and times without it. No NVIDIA driver that cudarepl loads runs
// here, so nothing is timed here either.
func lockFile(path string, waiting, beat func(), every, max time.Duration) (unlock func(), err error) {
	return nil, errors.New("this system has no flock(2)")
}
