package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"cudarepl/lessons"
)

// The variables the remote flags set, for this process and what it
// starts: the GPU package reads them when it opens a worker.
const (
	remoteEnv    = "CUDAREPL_REMOTE"
	workerCmdEnv = "CUDAREPL_WORKER_CMD"
)

// remoteArgs takes the flags that send GPU work elsewhere out of args,
// wherever they stand (before "--"), and returns the rest: --remote
// [user@]host[:path] and --worker-cmd "COMMAND" set $CUDAREPL_REMOTE and
// $CUDAREPL_WORKER_CMD for this command, and --remote-install copies this
// program to the remote host first, saying where on out.
func remoteArgs(args []string, out io.Writer) ([]string, error) {
	var remote, workerCmd *string
	install := false
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "remote" && name != "worker-cmd" && name != "remote-install" {
			rest = append(rest, a)
			continue
		}
		if name == "remote-install" {
			if hasValue {
				return nil, usageError{fmt.Sprintf("--remote-install=%s: --remote-install takes no value", value)}
			}
			install = true
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, usageError{fmt.Sprintf("--%s needs %s after it: 'cudarepl help' says more", name, remoteValue[name])}
			}
			i++
			value = args[i]
		}
		if strings.TrimSpace(value) == "" {
			return nil, usageError{fmt.Sprintf("--%s is empty: give %s", name, remoteValue[name])}
		}
		if name == "remote" {
			remote = &value
		} else {
			workerCmd = &value
		}
	}
	switch {
	case remote != nil && workerCmd != nil:
		return nil, usageError{"--remote and --worker-cmd both say where the worker runs: give one"}
	case remote != nil:
		os.Setenv(remoteEnv, *remote)
		os.Unsetenv(workerCmdEnv)
	case workerCmd != nil:
		os.Setenv(workerCmdEnv, *workerCmd)
	}
	if install {
		if err := installRemote(out); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// remoteValue is what each remote flag takes, for its messages.
var remoteValue = map[string]string{
	"remote":     "a host, [user@]host[:path]",
	"worker-cmd": `a command line that starts 'cudarepl worker', such as "ssh gpu1 cudarepl worker"`,
}

// installRemote copies this program to the remote host and says where.
func installRemote(out io.Writer) error {
	if os.Getenv(remoteEnv) == "" || os.Getenv(workerCmdEnv) != "" {
		return usageError{"--remote-install copies cudarepl over ssh to the host that --remote (or $CUDAREPL_REMOTE) names: give --remote HOST too"}
	}
	where, err := lessons.InstallRemote()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "copied this cudarepl to %s\n", where)
	return nil
}

// openEnv opens the lessons' env, live or in replay. Where the remote host
// has no cudarepl that can serve this one and a person is at the
// terminal, it offers to copy this one there (as --remote-install does)
// and opens again if they accept; elsewhere (a script, a notebook) the
// error says which flag does it, and nothing waits for an answer.
func openEnv(o lessons.Options) (*lessons.Env, error) {
	env, err := lessons.Open(o)
	var rb *lessons.RemoteBinaryError
	if !errors.As(err, &rb) || !rb.Installable || !interactive() {
		return env, err
	}
	fmt.Fprintf(os.Stderr, "%s.\nCopy this cudarepl there, as --remote-install does? [y/N] ", rb.Problem)
	if answer := strings.ToLower(readLine(os.Stdin)); answer != "y" && answer != "yes" {
		return nil, err
	}
	if err := installRemote(os.Stderr); err != nil {
		return nil, err
	}
	return lessons.Open(o)
}

// readLine reads one line from r a byte at a time, so that nothing after
// it is taken from what the REPL reads next.
func readLine(r io.Reader) string {
	var b strings.Builder
	var c [1]byte
	for {
		n, err := r.Read(c[:])
		if n == 1 && c[0] != '\n' {
			b.WriteByte(c[0])
		}
		if err != nil || n == 1 && c[0] == '\n' {
			return strings.TrimSpace(b.String())
		}
	}
}
