// Command cudarepl teaches GPU programming by running it.
//
// With no arguments it opens the REPL, where a learner opens a lesson and
// steps through it. The same actions run from the command line:
//
//	cudarepl lessons                          list the lessons
//	cudarepl run <lesson>                     run a lesson end to end
//	cudarepl check --all                      check every lesson
//	cudarepl check <lesson> --kernel FILE.cu  judge a kernel file
//	cudarepl bench <lesson> [--json FILE]     measure a lesson
//	cudarepl profile <lesson> [variant…]      its hardware counters (Nsight Compute)
//	cudarepl notebooks                        write the lessons' notebooks
//	cudarepl device                           describe the GPU
//	cudarepl version                          print the version, and what was found
//	cudarepl help [command]                   the usage, or one command's flags and examples
//	cudarepl worker                           serve a GPU worker on stdin and stdout
//
// Every command runs its GPU work on another host with --remote
// [user@]host[:path] (or $CUDAREPL_REMOTE), over the system's ssh, or
// through any command that gives a worker's pipe with --worker-cmd (or
// $CUDAREPL_WORKER_CMD): "cudarepl --remote gpu1 check vector-add".
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	xterm "golang.org/x/term"

	"cudarepl/internal/dl"
	"cudarepl/lessons"
	_ "cudarepl/lessons/all"
	_ "cudarepl/worker" // this program is its own GPU worker
)

// version is set at release; builds from a checkout report their commit.
const version = "0.1.0-dev"

const usage = `cudarepl teaches GPU programming by running it.

Usage:
  cudarepl                                  open the REPL
  cudarepl lessons                          list the lessons
  cudarepl run <lesson> [--plots DIR]       run a lesson end to end
  cudarepl check --all                      check every lesson's versions
  cudarepl check <lesson> [--variant NAME]  check a lesson's versions, or one of them
  cudarepl check <lesson> --kernel FILE.cu [--variant NAME] [--like VERSION]
                                            judge a kernel file as the lesson's are judged
                                            (lesson 3's exercise: a .sched schedule);
                                            each form of check takes --sanitize TOOL
  cudarepl bench <lesson> [sizes…] [--step N] [--rounds N] [--json FILE] [--plots DIR]
                                            measure a lesson (sizes like 2^20 or 1000x1003x517),
                                            or only its step N; --rounds: every point N times,
                                            a round at a time
  cudarepl profile <lesson> [variant…] [--step N] [--json FILE]
  cudarepl profile <lesson> --kernel FILE.cu [--variant NAME] [--like VERSION]
                                            why each version is as fast as it is: hardware
                                            counters from Nsight Compute (ncu), two tables for
                                            each sweep it runs; without a GPU, the recorded ones
  cudarepl notebooks [--dir DIR]            write every lesson's Jupyter notebook (GoNB)
  cudarepl notebooks run FILE.ipynb [--out FILE]
                                            run a notebook's cells here, without Jupyter
  cudarepl device                           print the GPU and its limits, or why there is none
  cudarepl version                          print the version of cudarepl and what it found
  cudarepl help [command]                   print this help, or one command's flags and examples
  cudarepl worker                           serve a GPU worker on stdin and stdout, for --remote

Each command takes --remote [user@]host[:path] to run its GPU work on that
host over ssh (also $CUDAREPL_REMOTE), or --worker-cmd "COMMAND" to run it
through any command that starts 'cudarepl worker' (also $CUDAREPL_WORKER_CMD);
--remote-install first copies this cudarepl to the host. Files, plots and
notebooks stay here; kernels compile and run there.

Without a GPU every lesson runs in replay mode, with results recorded on
reference GPUs ('cudarepl device' names them). Exercise copies live in
$CUDAREPL_WORKSPACE (default ~/cudarepl); figures go to <workspace>/plots.

Exit status: 0 passed (or nothing to judge), 1 a check or a verdict failed
or the command could not do its work here (--json with no GPU to measure),
2 a command line that cannot be run as written (an unknown flag, lesson,
variant or step), 3 a kernel that was not judged: it compiled at most, and
never ran (no GPU here, or no NVRTC).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if err := dl.CheckHidden(); err != nil {
		fmt.Fprintf(stderr, "cudarepl: %v\n", err)
	}
	args, err := remoteArgs(args, stdout)
	if err != nil {
		return exitStatus(stderr, err)
	}
	if len(args) == 0 {
		return runREPL(os.Stdin, stdout, stderr, interactive(), nil)
	}
	name, rest := args[0], args[1:]
	if c, ok := findSubcommand(name); ok && wantsHelp(rest) {
		writeSubcommandHelp(stdout, c)
		return 0
	}
	switch name {
	case "lessons":
		return exitStatus(stderr, cmdLessons(rest, stdout))
	case "run":
		return exitStatus(stderr, cmdRun(rest, stdout, stderr))
	case "check":
		return exitStatus(stderr, cmdCheck(rest, stdout, stderr))
	case "bench":
		return exitStatus(stderr, cmdBench(rest, stdout, stderr))
	case "profile":
		return exitStatus(stderr, cmdProfile(rest, stdout, stderr))
	case "notebooks":
		return exitStatus(stderr, cmdNotebooks(rest, stdout, stderr))
	case "device":
		return exitStatus(stderr, cmdDevice(rest, stdout, stderr))
	case "version", "--version", "-version":
		return exitStatus(stderr, cmdVersion(rest, stdout, stderr))
	case "help", "-h", "-help", "--help":
		return exitStatus(stderr, cmdHelp(rest, stdout))
	case "worker":
		if len(rest) > 0 {
			return exitStatus(stderr, extraArgs("worker", rest, "cudarepl "))
		}
		return lessons.ServeWorker(version)
	}
	fmt.Fprintf(stderr, "cudarepl: unknown command %q (try 'cudarepl help')\n", clip(name, 40))
	return exitUsage
}

// wantsHelp reports whether a command's arguments ask for its help
// (--help, -h) rather than for it to run.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--help", "-help", "-h":
			return true
		case "--":
			return false
		}
	}
	return false
}

// cmdHelp prints the usage, or one command's: its usage, flags and
// examples.
func cmdHelp(args []string, stdout io.Writer) error {
	switch len(args) {
	case 0:
		fmt.Fprint(stdout, usage)
		return nil
	case 1:
		c, ok := findSubcommand(args[0])
		if _, inREPL := findCommand(args[0]); !ok && inREPL {
			return usageError{fmt.Sprintf("%s is a command of the REPL: start cudarepl, then type 'help %s'", args[0], args[0])}
		}
		if !ok {
			return usageError{fmt.Sprintf("no command %q: 'cudarepl help' lists them", clip(args[0], 40))}
		}
		writeSubcommandHelp(stdout, c)
		return nil
	}
	return usageError{"usage: cudarepl help [command]"}
}

// cmdDevice prints the device table, or why there is no GPU and what the
// lessons replay; both are normal outcomes.
func cmdDevice(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return extraArgs("device", args, "cudarepl ")
	}
	env, err := openEnv(lessons.Options{View: lessons.View{Out: stdout}, Stderr: stderr})
	if err != nil {
		return err
	}
	defer env.Close()
	env.WriteDevice(stdout)
	return nil
}

// cmdVersion prints cudarepl's version, and the driver, NVRTC and
// libraries it finds, or why not.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return extraArgs("version", args, "cudarepl ")
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	fmt.Fprintf(stdout, "cudarepl %s%s\n", version, rev)
	env, err := openEnv(lessons.Options{View: lessons.View{Out: stdout}, Stderr: stderr})
	if err != nil {
		return err
	}
	defer env.Close()
	env.WriteVersions(stdout)
	return nil
}

// interactive reports whether standard input and output are both a
// terminal: a person typing. Not readline.DefaultIsTerminal, which says
// true on Windows whatever the handles are, so that a script piped in
// would meet a line editor and none of its commands would run.
func interactive() bool {
	return xterm.IsTerminal(int(os.Stdin.Fd())) && xterm.IsTerminal(int(os.Stdout.Fd()))
}
