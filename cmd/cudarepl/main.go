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
//	cudarepl version                          print the version
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/chzyer/readline"

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
  cudarepl check <lesson> [--kernel FILE.cu [--variant NAME] [--like VERSION]]
                                            check a lesson, or judge a kernel file
                                            (lesson 3's exercise: a .sched schedule)
  cudarepl bench <lesson> [sizes…] [--rounds N] [--json FILE] [--plots DIR]
                                            measure a lesson (sizes like 2^20 or 1000x1003x517);
                                            --rounds: every point N times, a round at a time
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
  cudarepl help                             print this help

Without a GPU every lesson runs in replay mode, with results recorded on a
reference GPU. Exercise copies live in $CUDAREPL_WORKSPACE (default ~/cudarepl).

Exit status: 0 passed (or nothing to judge), 1 a check or a verdict failed,
2 a command line that cannot be run as written, 3 a kernel that was not
judged: it compiled at most, and never ran (no GPU here, or no NVRTC).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runREPL(os.Stdin, stdout, stderr, readline.DefaultIsTerminal(), nil)
	}
	switch args[0] {
	case "lessons":
		return cmdLessons(stdout)
	case "run":
		return exitStatus(stderr, cmdRun(args[1:], stdout, stderr))
	case "check":
		return exitStatus(stderr, cmdCheck(args[1:], stdout, stderr))
	case "bench":
		return exitStatus(stderr, cmdBench(args[1:], stdout, stderr))
	case "profile":
		return exitStatus(stderr, cmdProfile(args[1:], stdout, stderr))
	case "notebooks":
		return exitStatus(stderr, cmdNotebooks(args[1:], stdout, stderr))
	case "device":
		return cmdDevice(stdout, stderr)
	case "version", "--version", "-version":
		return cmdVersion(stdout)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "cudarepl: unknown command %q (try 'cudarepl help')\n", args[0])
	return 2
}

// cmdDevice prints the device table, or the one sentence saying why there is
// no GPU; both are normal outcomes.
func cmdDevice(stdout, stderr io.Writer) int {
	env, err := lessons.Open(lessons.Options{View: lessons.View{Out: stdout}, Stderr: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "cudarepl: %v\n", err)
		return 1
	}
	defer env.Close()
	env.WriteDevice(stdout)
	return 0
}

func cmdVersion(stdout io.Writer) int {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	fmt.Fprintf(stdout, "cudarepl %s%s\n", version, rev)
	lessons.WriteVersions(stdout)
	return 0
}
