package sysproc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

// WorkerEnv names the variable that turns a process into a worker; its
// value names the backend it serves ("gpu", or a fake registered by tests).
const WorkerEnv = "CUDAREPL_GPU_WORKER"

// Spawn starts argv as a worker process with env added to this one's,
// its calls pipe on fd 3 and its replies pipe on fd 4 (Pipes), its output
// to stderr, in a process group of its own (Attr), and returns the other
// ends of the pipes.
func Spawn(argv, env []string, stderr io.Writer) (*exec.Cmd, *os.File, *os.File, error) {
	callsR, callsW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gpu: start worker: %w", err)
	}
	repliesR, repliesW, err := os.Pipe()
	if err != nil {
		callsR.Close()
		callsW.Close()
		return nil, nil, nil, fmt.Errorf("gpu: start worker: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	Pipes(cmd, callsR, repliesW, stderr) // fds 3 and 4; stdin and stdout on Windows
	cmd.SysProcAttr = Attr()
	err = cmd.Start()
	callsR.Close()
	repliesW.Close()
	if err != nil {
		callsW.Close()
		repliesR.Close()
		return nil, nil, nil, fmt.Errorf("gpu: start worker %s: %w", argv[0], err)
	}
	return cmd, callsW, repliesR, nil
}
