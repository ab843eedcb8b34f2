package sysproc

import "syscall"

// writeStdoutFD writes s to the standard output handle, where a C library
// loaded now would write its stdout.
func writeStdoutFD(s string) {
	h, err := syscall.GetStdHandle(syscall.STD_OUTPUT_HANDLE)
	if err != nil {
		return
	}
	var n uint32
	syscall.WriteFile(h, []byte(s), &n, nil)
}
