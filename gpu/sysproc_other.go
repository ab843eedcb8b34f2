//go:build !linux

package gpu

import "syscall"

// workerSysProcAttr: outside Linux the worker notices its parent is gone
// when its calls pipe closes.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }
