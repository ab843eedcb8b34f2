package remote

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	"cudarepl/gpu"
	"cudarepl/internal/dl"
	"cudarepl/internal/sysproc"
)

// clientSilence is how long the host's end waits for word from a client
// before it takes the client as gone and ends the worker: a laptop whose
// network went away must not hold a GPU for the hours TCP takes to
// notice.
const clientSilence = 30 * time.Second

// Serve serves one worker to a client on in and out, the standard input
// and output of "cudarepl worker" that ssh (or any command) carries: it
// says hello with the protocol it speaks, reads the client's setup, starts
// this program again as a worker (a child with its pipes on fds 3 and 4,
// as gpu.Open starts one, under the setup's wrapper if any), and
// relays the client's calls and the worker's replies as frames, with a
// heartbeat each way. When the client's calls end (it closed them, or it
// was not heard from for 30 s) the worker's calls are closed, and a
// worker still running 5 s later (30 s under a wrapper, which writes its
// report as the worker exits) is killed. Then the host sends what the
// wrapper logged and how the worker ended. version is the program's, for
// the client's messages. It returns the exit status for the program.
func Serve(version string, in io.Reader, out io.Writer) int {
	if version == "" {
		version = "unknown"
	}
	if _, err := fmt.Fprintf(out, "%s %d %s %s/%s\n", helloWord, gpu.WorkerProtocol, version, runtime.GOOS, runtime.GOARCH); err != nil {
		return 1
	}
	fw := &frameWriter{w: out}
	br := bufio.NewReaderSize(in, 64<<10)
	line, err := br.ReadString('\n')
	if err != nil {
		return 0 // the client went away, or is a person at a terminal who typed Ctrl-D
	}
	host, _ := os.Hostname()
	var s remoteSetup
	if err := json.Unmarshal([]byte(line), &s); err != nil || s.Protocol != gpu.WorkerProtocol {
		fw.frame(frameError, fmt.Appendf(nil, "gpu: the worker on %s speaks worker protocol %d and could not read what the client sent first (%.60q): run the same cudarepl at both ends", host, gpu.WorkerProtocol, line))
		return 2
	}
	cmd, calls, replies, logDir, err := s.start(host)
	if err != nil {
		fw.frame(frameError, []byte(err.Error()))
		return 2
	}
	if logDir != "" {
		defer os.RemoveAll(logDir)
	}
	waitErr, quiet := relay(cmd, calls, replies, br, fw, len(s.Wrap) > 0)
	if quiet {
		return 0 // nobody is left to tell
	}
	if logDir != "" {
		paths, _ := filepath.Glob(filepath.Join(logDir, "*"))
		sort.Strings(paths)
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				fw.frame(frameLog, b)
			}
		}
	}
	cause := "exit status 0"
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		cause = ee.ProcessState.String()
	}
	fw.frame(frameExit, []byte(cause))
	return 0
}

// start starts the worker the setup asks for, on host: this program
// again, under the setup's wrapper, whose tool is looked for here as
// dl.Tool looks (where the client named a path that this host does not
// have). It returns the worker's pipes and the wrapper's log folder.
func (s remoteSetup) start(host string) (cmd *exec.Cmd, calls, replies *os.File, logDir string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, nil, "", fmt.Errorf("gpu: start the worker on %s: %w", host, err)
	}
	argv := []string{exe}
	if len(s.Wrap) > 0 {
		if _, err := exec.LookPath(s.Wrap[0]); err != nil {
			p, ok := dl.Tool(filepath.Base(s.Wrap[0]))
			if !ok {
				return nil, nil, nil, "", fmt.Errorf("gpu: start the worker under %s on %s: %s is not installed there (looked on PATH and in the CUDA toolkit's bin folder; it comes with the CUDA toolkit)",
					s.WrapName, host, filepath.Base(s.Wrap[0]))
			}
			s.Wrap = append([]string{p}, s.Wrap[1:]...)
		}
		if logDir, err = os.MkdirTemp("", "cudarepl-wrapper-"); err != nil {
			return nil, nil, nil, "", fmt.Errorf("gpu: %s's log folder on %s: %w", s.WrapName, host, err)
		}
		argv = (&gpu.Wrapper{Name: s.WrapName, Argv: s.Wrap}).Command(exe, logDir, s.Start)
	}
	backend := s.Backend
	if backend == "" {
		backend = "gpu"
	}
	cmd, calls, replies, err = sysproc.Spawn(argv, append([]string{sysproc.WorkerEnv + "=" + backend}, s.Env...), os.Stderr)
	if err != nil {
		os.RemoveAll(logDir)
		return nil, nil, nil, "", err
	}
	return cmd, calls, replies, logDir, nil
}

// relay carries the client's data frames (from br) to the worker's calls
// and its replies to the client (through fw) until the worker exits. It
// returns how the worker ended (cmd.Wait's error), and whether the client
// went silent: then it is taken as gone, the worker is killed at once,
// and nothing more is sent.
func relay(cmd *exec.Cmd, calls, replies *os.File, br *bufio.Reader, fw *frameWriter, wrapped bool) (waitErr error, quiet bool) {
	var heard atomic.Int64
	heard.Store(time.Now().UnixNano())
	clientDone := make(chan struct{})
	go func() { // the client's frames: calls for the worker, and heartbeats
		defer close(clientDone)
		for {
			kind, payload, err := readFrame(br)
			if err != nil {
				return
			}
			heard.Store(time.Now().UnixNano())
			if kind == frameData {
				calls.Write(payload) // fails once the worker is gone; the frames are read on, so the client never blocks
			}
		}
	}()
	relayed := make(chan struct{})
	go func() { // the worker's replies
		defer close(relayed)
		buf := make([]byte, 256<<10)
		for {
			n, err := replies.Read(buf)
			if n > 0 {
				fw.frame(frameData, buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	grace := 5 * time.Second
	if wrapped {
		grace = 30 * time.Second
	}
	beats := time.NewTicker(heartbeat)
	defer beats.Stop()
	ended := (<-chan struct{})(clientDone)
	var kill <-chan time.Time
	for {
		select {
		case <-exited:
			select { // what the worker wrote before it ended, unless a child of its own holds the pipe
			case <-relayed:
			case <-time.After(2 * time.Second):
			}
			return waitErr, quiet
		case <-ended:
			ended = nil
			calls.Close() // a worker ends when its calls do
			kill = time.After(grace)
		case <-kill:
			sysproc.KillTree(cmd.Process)
		case <-beats.C:
			fw.beat()
			if ended != nil && time.Since(time.Unix(0, heard.Load())) > clientSilence {
				quiet, ended = true, nil
				calls.Close()
				sysproc.KillTree(cmd.Process)
			}
		}
	}
}
