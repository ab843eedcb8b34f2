package sysproc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"unsafe"
)

// Attr starts the worker in a process group of its own, which Windows
// starts with Ctrl-C turned off: Ctrl-C in the console, meant for the REPL,
// no longer reaches the worker, or the ssh of a remote one. Windows has no
// parent-death signal: a worker whose parent is gone sees its calls pipe
// close, and exits.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// KillTree kills the worker and every process it started (a wrapper's
// worker, ssh's helpers): Windows has no process group to kill at once,
// so the tree is read from a snapshot of the processes, and children go
// first, while their parent's id still names their parent.
func KillTree(p *os.Process) {
	for _, pid := range descendants(uint32(p.Pid)) {
		if h, err := syscall.OpenProcess(syscall.PROCESS_TERMINATE, false, pid); err == nil {
			syscall.TerminateProcess(h, 1)
			syscall.CloseHandle(h)
		}
	}
	p.Kill()
}

// descendants lists the processes that root started, and those they
// started, deepest first. A process is root's child only if it started
// after root did: an id Windows handed on from a process that is gone may
// still be the parent id of processes older than root.
func descendants(root uint32) []uint32 {
	snap, err := syscall.CreateToolhelp32Snapshot(syscall.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil
	}
	defer syscall.CloseHandle(snap)
	children := map[uint32][]uint32{}
	e := syscall.ProcessEntry32{Size: uint32(unsafe.Sizeof(syscall.ProcessEntry32{}))}
	for err := syscall.Process32First(snap, &e); err == nil; err = syscall.Process32Next(snap, &e) {
		if e.ProcessID != e.ParentProcessID {
			children[e.ParentProcessID] = append(children[e.ParentProcessID], e.ProcessID)
		}
	}
	var out []uint32
	var walk func(parent uint32, born int64)
	walk = func(parent uint32, born int64) {
		for _, c := range children[parent] {
			cb := startTime(c)
			if cb == 0 || cb < born {
				continue
			}
			walk(c, cb)
			out = append(out, c)
		}
	}
	if born := startTime(root); born != 0 {
		walk(root, born)
	}
	return out
}

// processQueryLimitedInformation is the right to read a process's times,
// which Windows grants on more processes than PROCESS_QUERY_INFORMATION.
const processQueryLimitedInformation = 0x1000

// startTime returns when process pid started, in 100 ns since 1601; 0
// where it cannot be read (the process is gone, or not ours to query).
func startTime(pid uint32) int64 {
	h, err := syscall.OpenProcess(processQueryLimitedInformation, false, pid)
	if err != nil {
		return 0
	}
	defer syscall.CloseHandle(h)
	var created, exited, kernel, user syscall.Filetime
	if syscall.GetProcessTimes(h, &created, &exited, &kernel, &user) != nil {
		return 0
	}
	return int64(created.HighDateTime)<<32 | int64(created.LowDateTime)
}

var procSetStdHandle = syscall.NewLazyDLL("kernel32.dll").NewProc("SetStdHandle")

// Pipes gives the worker cmd its pipe as its stdin (calls) and stdout
// (replies): a child on Windows inherits no handles but its standard
// three from os/exec (ExtraFiles is not supported there). Its stderr is
// stderr.
func Pipes(cmd *exec.Cmd, calls, replies *os.File, stderr io.Writer) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = calls, replies, stderr
}

// Conn returns the pipe Pipes gave this worker: stdin, and stdout's
// handle. The process's standard output handle, which C libraries loaded
// later take as theirs, then is stderr's, and so is os.Stdout, so that
// nothing else the worker writes (a kernel's printf, a library's message)
// can reach the pipe and break the stream. Call it before loading the
// driver.
func Conn() (in, out *os.File, err error) {
	errH, err := syscall.GetStdHandle(syscall.STD_ERROR_HANDLE)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: worker: stderr's handle: %w", err)
	}
	out = os.Stdout
	stdout := syscall.STD_OUTPUT_HANDLE // a DWORD of -11: a variable, which uintptr takes
	if r, _, callErr := procSetStdHandle.Call(uintptr(stdout), uintptr(errH)); r == 0 {
		return nil, nil, fmt.Errorf("gpu: worker: point stdout at stderr: %w", callErr)
	}
	os.Stdout = os.Stderr
	return os.Stdin, out, nil
}
