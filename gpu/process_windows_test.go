package gpu

import "syscall"

// errorInvalidParameter is what OpenProcess says of an id that no process
// has any more.
const errorInvalidParameter = syscall.Errno(87)

// processGone reports whether process pid has exited.
func processGone(pid int) (bool, error) {
	const synchronize = 0x00100000
	h, err := syscall.OpenProcess(synchronize, false, uint32(pid))
	if err != nil {
		return err == errorInvalidParameter, nil
	}
	defer syscall.CloseHandle(h)
	ev, err := syscall.WaitForSingleObject(h, 0)
	if err != nil {
		return false, err
	}
	return ev == syscall.WAIT_OBJECT_0, nil
}
