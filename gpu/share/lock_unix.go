//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package share

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock(2) on the file at path, making the
// file and its folder where they are missing, and returns what releases
// it. Where another process holds it, it calls waiting once, then beat
// each time every passes until the lock is free, and gives up with
// errLockWait after max.
//
// Each call opens the file afresh and closing it releases the lock: two
// holders in one process exclude each other as two processes do, and a
// wait given up on leaves nothing behind but a goroutine that closes the
// file once its flock returns.
func lockFile(path string, waiting, beat func(), every, max time.Duration) (unlock func(), err error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	unlock = func() { f.Close() }
	err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return unlock, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	waiting()
	got := make(chan error, 1)
	go func() { got <- flock(f, syscall.LOCK_EX) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	limit := time.NewTimer(max)
	defer limit.Stop()
	for {
		select {
		case err := <-got:
			if err != nil {
				f.Close()
				return nil, &os.PathError{Op: "flock", Path: path, Err: err}
			}
			return unlock, nil
		case <-tick.C:
			beat()
		case <-limit.C:
			go func() {
				<-got
				f.Close()
			}()
			return nil, errLockWait
		}
	}
}

// flock is flock(2), tried again when a signal interrupts it (the Go
// runtime's own signals do).
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// openLockFile opens the lock file at path for reading, which is all that
// flock needs, making it (readable by all) and its folder (writable by
// all, sticky, as /tmp is) where they are missing. An existing file is
// opened without O_CREAT: where fs.protected_regular is set, Linux refuses
// O_CREAT on another user's file in a sticky folder.
func openLockFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return nil, err
		}
		// MkdirAll's mode passes through the umask; a lock folder that
		// only its maker can write locks out every other learner.
		if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
			return nil, err
		}
	}
	f, err = os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return os.Open(path) // made by another process meanwhile
	}
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil { // past the umask, so others can open it
		f.Close()
		return nil, err
	}
	return f, nil
}
