// Package sysproc starts and ends a GPU worker as a process of its own, on
// each system cudarepl runs on: its pipe (fds 3 and 4; stdin and stdout on
// Windows, which passes a child no other handles), a process group that
// Ctrl-C at the terminal does not reach, a parent-death signal where Linux
// has one, and a kill that reaches what the worker runs under (a wrapper
// such as compute-sanitizer, ssh's helpers).
//
// Package gpu starts its workers with it, and so does package gpu/remote
// on a GPU host, where the worker is the host end's child. It knows
// nothing of what crosses the pipe.
package sysproc
