package gpu

import "syscall"

// workerSysProcAttr makes the kernel kill the worker if its parent dies, so
// that no worker outlives the program that started it.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
