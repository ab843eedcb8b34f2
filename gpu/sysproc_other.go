//go:build !linux

package gpu

import (
	"os"
	"syscall"
)

// workerSysProcAttr: outside Linux the worker notices its parent is gone
// when its calls pipe closes.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }

// killTree kills the worker.
func killTree(p *os.Process) { p.Kill() }
