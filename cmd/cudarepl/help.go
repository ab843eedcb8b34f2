package main

import (
	"flag"
	"fmt"
	"io"
)

// subcommand is what 'cudarepl help NAME' says of a command: how it is
// written, what it does, its flags (the very flag set it parses) and
// examples that run as written.
type subcommand struct {
	name     string
	usage    []string // its forms, after "cudarepl "
	about    string
	flags    func() *flag.FlagSet // nil: it takes no flags
	examples []string             // after "cudarepl "
}

// subcommands are the command line's commands, in the order the usage
// lists them.
var subcommands = []subcommand{
	{name: "lessons", usage: []string{"lessons"},
		about:    "Lists the lessons: number, name, title, steps, and whether it ends in an exercise. A lesson is named by its number, its name or the start of its name.",
		examples: []string{"lessons"}},
	{name: "run", usage: []string{"run <lesson> [--plots DIR]"},
		about:    "Runs a lesson end to end: every step's prose, then what the step runs; without a GPU, the results recorded on the reference GPU.",
		flags:    func() *flag.FlagSet { return runFlags(new(string)) },
		examples: []string{"run vector-add", "run 2 --plots ~/figures"}},
	{name: "check", usage: []string{"check --all", "check <lesson> [--variant NAME] [--sanitize TOOL]",
		"check <lesson> --kernel FILE.cu [--variant NAME] [--like VERSION] [--sanitize TOOL]"},
		about: "Checks every version of a lesson (or, with --variant, one) element by element against the CPU reference at every check size; " +
			"or judges the kernel in a file exactly as the lesson's versions are judged (lesson 3's exercise is a .sched schedule). " +
			"The file may be given without --kernel. Exit status 0 passed, 1 failed, 3 not judged (no GPU here, or no NVRTC).",
		flags: func() *flag.FlagSet { return checkFlags(&checkArgs{}) },
		examples: []string{"check vector-add", "check softmax --variant softmax_v3", "check vector-add --kernel mine.cu",
			"check matmul --kernel mine.cu --sanitize racecheck", "check --all"}},
	{name: "bench", usage: []string{"bench <lesson> [sizes…] [--step N] [--rounds N] [--json FILE] [--plots DIR]"},
		about: "Measures a lesson: every step that measures or checks, or only step N. Sizes (1048576, 2^20, 1M, or 1000x1003x517 for a product) " +
			"replace those of the lesson's sweeps over sizes, and only those sweeps run. Without a GPU the recorded results show, and --json is refused.",
		flags: func() *flag.FlagSet { return benchFlags(&benchArgs{}) },
		examples: []string{"bench vector-add", "bench vector-add 2^20 2^24", "bench matmul 1000x1003x517",
			"bench fusion --rounds 3", "bench vector-add --step 7", "bench vector-add --json results.json"}},
	{name: "profile", usage: []string{"profile <lesson> [variant…] [--step N] [--json FILE]",
		"profile <lesson> --kernel FILE.cu [--variant NAME] [--like VERSION]"},
		about: "Runs each version of the lesson's sweeps once under Nsight Compute (ncu) and shows why each is as fast as it is: " +
			"a memory table and a compute table per sweep. With --kernel, a learner's kernel beside the version it is like. " +
			"Without a GPU, the profiles recorded with the lesson.",
		flags:    func() *flag.FlagSet { return profileFlags(&profileArgs{}) },
		examples: []string{"profile matmul", "profile matmul matmul_v3 matmul_v7", "profile vector-add --kernel mine.cu"}},
	{name: "notebooks", usage: []string{"notebooks [--dir DIR]", "notebooks run FILE.ipynb [--out FILE]"},
		about: "Writes every lesson's Jupyter notebook for the GoNB kernel ('make notebook' installs it); " +
			"'notebooks run' runs a notebook's cells in this process, without Jupyter, and writes the notebook with their outputs " +
			"(--out: where; its figures go into the notebook).",
		flags: func() *flag.FlagSet {
			var dir, out string
			fs := notebooksFlags(&dir)
			notebooksRunFlags(&out).VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
			return fs
		},
		examples: []string{"notebooks", "notebooks run notebooks/02-vector-add.ipynb --out /tmp/02.ipynb"}},
	{name: "device", usage: []string{"device"},
		about:    "Describes the GPU: what the driver reports, the libraries' versions and free memory. Without one, says why, and describes the GPUs the lessons' results were recorded on.",
		examples: []string{"device"}},
	{name: "version", usage: []string{"version"},
		about:    "Prints cudarepl's version, and what it found of the driver, NVRTC and the libraries, or why not.",
		examples: []string{"version"}},
	{name: "worker", usage: []string{"worker"},
		about: "Serves one GPU worker on standard input and output, in the worker protocol: what another machine's " +
			"'cudarepl --remote HOST' starts here over ssh, and what --worker-cmd starts through any other command (a container's exec). " +
			"It runs the kernels, compiles them with this host's NVRTC, and ends when the client's connection does. " +
			"Every command takes --remote [user@]host[:path] (or $CUDAREPL_REMOTE), --worker-cmd COMMAND (or $CUDAREPL_WORKER_CMD) " +
			"and --remote-install, which copies this cudarepl to the host first; docs/remote.md says more.",
		examples: []string{"worker"}},
	{name: "help", usage: []string{"help [command]"},
		about:    "Prints the usage, or one command's forms, flags and examples. 'cudarepl COMMAND --help' does the same.",
		examples: []string{"help", "help check"}},
}

// findSubcommand returns the command line's command name.
func findSubcommand(name string) (subcommand, bool) {
	for _, c := range subcommands {
		if c.name == name {
			return c, true
		}
	}
	return subcommand{}, false
}

// writeSubcommandHelp prints what 'cudarepl help NAME' says of c.
func writeSubcommandHelp(w io.Writer, c subcommand) {
	fmt.Fprintln(w, "Usage:")
	for _, u := range c.usage {
		fmt.Fprintf(w, "  cudarepl %s\n", u)
	}
	fmt.Fprintln(w)
	for _, l := range wrap(c.about, 76) {
		fmt.Fprintln(w, l)
	}
	if c.flags != nil {
		fmt.Fprintln(w, "\nFlags (before or after the other arguments):")
		writeFlags(w, c.flags())
	}
	fmt.Fprintln(w, "\nExamples:")
	for _, e := range c.examples {
		fmt.Fprintf(w, "  cudarepl %s\n", e)
	}
}
