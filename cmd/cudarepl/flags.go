package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// newFlags returns the flag set of command name ("check", "notebooks
// run"), which prints nothing itself: a bad flag is one error, worded by
// flagError, and the flags are listed by 'help NAME', with two dashes as
// the README writes them.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("cudarepl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// plotsFlag adds --plots, where run, bench and notebooks run write figures.
func plotsFlag(fs *flag.FlagSet, dir *string) {
	fs.StringVar(dir, "plots", "", "write figures, as PNG and SVG, to the folder `DIR` (default <workspace>/plots)")
}

// parseArgs parses flags that may come before or after the positional
// arguments, as "cudarepl bench vector-add --json out.json" has them. A
// bad flag is a usageError that names the flag with two dashes and says
// where the flags are listed: "help" is how help is asked for where the
// error is read ("cudarepl help" on the command line, "help" in the REPL).
func parseArgs(fs *flag.FlagSet, args []string, help string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(fs, err, help)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// The errors package flag returns, as go1.26 words them.
var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	flagBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]*): (.*)$`)
	singleDash    = regexp.MustCompile(`(^|[\s(])-(\w)`)
)

// flagError is err, from fs.Parse, as one line a learner can act on: the
// flag with two dashes, what was wrong with it, and where the flags are
// listed.
func flagError(fs *flag.FlagSet, err error, help string) error {
	cmd := strings.TrimPrefix(fs.Name(), "cudarepl ")
	where := fmt.Sprintf("'%s %s' lists its flags", help, cmd)
	if errors.Is(err, flag.ErrHelp) {
		return usageError{fmt.Sprintf("%s: %s", cmd, where)}
	}
	msg := err.Error()
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		return usageError{fmt.Sprintf("%s has no flag --%s: %s", cmd, m[1], where)}
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		value := "a value"
		if f := fs.Lookup(m[1]); f != nil {
			if name, _ := flag.UnquoteUsage(f); name != "" {
				value = name
			}
		}
		return usageError{fmt.Sprintf("%s --%s needs %s after it: %s", cmd, m[1], value, where)}
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[2]); f != nil && isBool(f) {
			return usageError{fmt.Sprintf("%s --%s=%s: --%s takes no value", cmd, m[2], m[1], m[2])}
		}
		why := m[3]
		if why == "parse error" {
			why = "not a whole number"
		}
		return usageError{fmt.Sprintf("%s --%s %s: %s", cmd, m[2], m[1], why)}
	}
	return usageError{fmt.Sprintf("%s: %s: %s", cmd, singleDash.ReplaceAllString(msg, "$1--$2"), where)}
}

// isBool reports whether f is a flag that takes no value, such as --all.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// writeFlags lists fs's flags as the README writes them, one a line with
// two dashes and the value it takes, then what it does.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	type row struct{ flag, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		s := "--" + f.Name
		if !isBool(f) {
			if name == "" || name == "value" {
				name = "VALUE"
			}
			s += " " + name
		}
		rows = append(rows, row{s, usage})
		width = max(width, len(s))
	})
	for _, r := range rows {
		lines := wrap(r.usage, 76-width-4)
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.flag, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "  %-*s  %s\n", width, "", l)
		}
	}
}

// wrap breaks s into lines of at most width columns, at spaces.
func wrap(s string, width int) []string {
	width = max(width, 30)
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// expandHome is path with a leading ~ (alone, or before a /) replaced by
// the home folder, as a shell would have done: the REPL has no shell, and
// a shell leaves "--kernel=~/mine.cu" as it is.
func expandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, path[1:])
}
