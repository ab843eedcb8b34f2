//go:build unix && !linux

package sysproc

import (
	"os"
	"syscall"
)

// Attr puts the worker in a process group of its own, as on Linux: Ctrl-C
// at the terminal, meant for the REPL, does not reach it (nor the ssh of a
// remote worker), and killing the group reaches a wrapper and its worker
// both. macOS and the BSDs have no parent-death signal: a worker whose
// parent is gone sees its calls pipe close, and exits.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// KillTree kills the worker's process group: the worker, and the program
// wrapped around it if there is one.
func KillTree(p *os.Process) {
	syscall.Kill(-p.Pid, syscall.SIGKILL)
	p.Kill()
}
