package dl

import (
	"syscall"
	"unsafe"
)

// KeepSignalHandlers saves the handler of every catchable signal and
// returns a function that puts them all back.
//
// NVRTC is LLVM inside, and LLVM installs handlers of its own (for SIGINT,
// SIGSEGV and others) without SA_ONSTACK. The Go runtime cannot run on such
// a handler: the next Ctrl-C, or a signal.Notify'd SIGINT, ends the process
// with "non-Go code set up signal handler without SA_ONSTACK flag". So every
// NVRTC call is wrapped in KeepSignalHandlers.
func KeepSignalHandlers() (restore func()) {
	// The kernel's struct sigaction, read and written back as opaque bytes.
	type kernelSigaction [4]uint64
	const sigsetSize = 8
	var saved [65]kernelSigaction
	var ok [65]bool
	for sig := 1; sig < len(saved); sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) {
			continue
		}
		_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), 0,
			uintptr(unsafe.Pointer(&saved[sig])), sigsetSize, 0, 0)
		ok[sig] = errno == 0
	}
	return func() {
		for sig := 1; sig < len(saved); sig++ {
			if ok[sig] {
				syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&saved[sig])), 0, sigsetSize, 0, 0)
			}
		}
	}
}
