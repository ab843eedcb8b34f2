//go:build unix

package sysproc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Pipes gives the worker cmd its pipe on fd 3 (calls) and fd 4
// (replies), and stderr as its stdout and stderr: what a kernel's printf
// or a library writes cannot reach the pipe.
func Pipes(cmd *exec.Cmd, calls, replies *os.File, stderr io.Writer) {
	cmd.ExtraFiles = []*os.File{calls, replies} // fd 3, fd 4
	cmd.Stdout, cmd.Stderr = stderr, stderr
}

// Conn returns the pipe Pipes gave this worker.
func Conn() (in, out *os.File, err error) {
	in, out = os.NewFile(3, "calls"), os.NewFile(4, "replies")
	if in == nil || out == nil {
		return nil, nil, fmt.Errorf("gpu: worker: started without its pipes (fd 3, 4); %s is set only for workers", WorkerEnv)
	}
	return in, out, nil
}
