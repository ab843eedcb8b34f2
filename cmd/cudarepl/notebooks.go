package main

import (
	"bytes"
	"errors"
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
	fs, _ := newFlags("notebooks", stderr)
	dir := fs.String("dir", "notebooks", "where the notebooks go")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	if len(pos) > 0 {
		return usageError{"usage: cudarepl notebooks [--dir DIR] | cudarepl notebooks run FILE.ipynb [--out FILE]"}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	for _, l := range lessons.All() {
		b, err := notebook.Generate(l)
		if err != nil {
			return err
		}
		path := filepath.Join(*dir, notebook.FileName(l))
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

// runNotebook executes a notebook's cells in this process and writes the
// notebook with their outputs.
func runNotebook(args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlags("notebooks run", stderr)
	out := fs.String("out", "", "where the executed notebook goes (default: FILE with .executed.ipynb)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	if len(pos) != 1 {
		return usageError{"usage: cudarepl notebooks run FILE.ipynb [--out FILE]"}
	}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return usageError{"cudarepl: " + err.Error()}
	}
	if *out == "" {
		*out = strings.TrimSuffix(pos[0], ".ipynb") + ".executed.ipynb"
	}
	s, err := openSession(stdout, cf.plots)
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
	if err := os.WriteFile(*out, executed, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return runErr // a failed step: the notebook is written, with its error, but the run fails
}
