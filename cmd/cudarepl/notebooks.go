package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"cudarepl/lessons"
	"cudarepl/notebook"
)

// cmdNotebooks writes every lesson's notebook, or runs one without Jupyter.
func cmdNotebooks(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "run" {
		return runNotebook(args[1:], stdout, stderr)
	}
	var dir string
	pos, err := parseArgs(notebooksFlags(&dir), args, "cudarepl help")
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"usage: cudarepl notebooks [--dir DIR] | cudarepl notebooks run FILE.ipynb [--out FILE]"}
	}
	dir = expandHome(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, l := range lessons.All() {
		b, err := notebook.Generate(l)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, notebook.FileName(l))
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, b) {
			fmt.Fprintf(stdout, "%s is up to date\n", path)
			continue
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	return nil
}

// notebooksFlags are the flags of notebooks, read into dir.
func notebooksFlags(dir *string) *flag.FlagSet {
	fs := newFlags("notebooks")
	fs.StringVar(dir, "dir", "notebooks", "write the notebooks to the folder `DIR`")
	return fs
}

// notebooksRunFlags are the flags of notebooks run.
// Its figures go into the notebook, so it has no --plots.
func notebooksRunFlags(out *string) *flag.FlagSet {
	fs := newFlags("notebooks run")
	fs.StringVar(out, "out", "", "write the executed notebook to `FILE` (default: the notebook's name, ending in .executed.ipynb)")
	return fs
}

// runNotebook executes a notebook's cells in this process and writes the
// notebook with their outputs.
func runNotebook(args []string, stdout, stderr io.Writer) error {
	var out string
	pos, err := parseArgs(notebooksRunFlags(&out), args, "cudarepl help")
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: cudarepl notebooks run FILE.ipynb [--out FILE]"}
	}
	in := expandHome(pos[0])
	data, err := os.ReadFile(in)
	if err != nil {
		return usageError{err.Error()}
	}
	out = expandHome(out)
	if out == "" {
		out = strings.TrimSuffix(in, ".ipynb") + ".executed.ipynb"
	}
	s, err := openSession(stdout, "")
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintln(stdout, s.banner())
	s.env.PlotDir = "" // figures go into the notebook
	executed, runErr := notebook.Run(data, s.env)
	var failed notebook.StepErrors
	if runErr != nil && !errors.As(runErr, &failed) {
		return runErr
	}
	if err := os.WriteFile(out, executed, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", out)
	return runErr // a failed step: the notebook is written, with its error, but the run fails
}
