//go:build unix

package gpu

import "syscall"

// processGone reports whether no process has id pid (a process that has
// exited but was not yet waited for still has one).
func processGone(pid int) (bool, error) {
	switch err := syscall.Kill(pid, 0); err {
	case nil, syscall.EPERM:
		return false, nil
	case syscall.ESRCH:
		return true, nil
	default:
		return false, err
	}
}
