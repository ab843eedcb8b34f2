package sysproc

import (
	"os"
	"syscall"
)

// Attr makes the kernel kill the worker if its parent dies, so that no
// worker outlives the program that started it, and puts it in a process
// group of its own: a worker under compute-sanitizer is the sanitizer's
// child, and killing the group reaches both. Ctrl-C at the terminal, meant
// for the REPL, no longer reaches the worker.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// KillTree kills the worker's process group: the worker, and the
// sanitizer around it if there is one.
func KillTree(p *os.Process) {
	syscall.Kill(-p.Pid, syscall.SIGKILL)
	p.Kill()
}
