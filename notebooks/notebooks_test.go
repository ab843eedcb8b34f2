// Package notebooks holds the lessons' Jupyter notebooks; its test executes
// each one on the GoNB kernel, headless, as a learner's Jupyter would.
package notebooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cudarepl/internal/dl"
	"cudarepl/lessons"
	_ "cudarepl/lessons/all"
	"cudarepl/notebook"
)

// TestExecuteNotebooks runs every notebook through nbconvert and fails on
// any error output and on a notebook that shows no image. It is skipped
// under -short, and where Jupyter or the GoNB kernel is missing
// (make notebook installs the kernel).
func TestExecuteNotebooks(t *testing.T) {
	if testing.Short() {
		t.Skip("executing notebooks takes minutes; skipped under -short")
	}
	if _, err := exec.LookPath("jupyter"); err != nil || dl.Hidden("jupyter") {
		t.Skip("jupyter not found: install Debian's jupyter-nbconvert and python3-nbclient to execute the notebooks")
	}
	specs, err := exec.Command("jupyter", "kernelspec", "list").Output()
	if err != nil || !strings.Contains(string(specs), "gonb") {
		t.Skip("the GoNB kernel is not installed: run make notebook")
	}
	if _, err := exec.LookPath("goimports"); err != nil {
		t.Skip("goimports is not on PATH, and GoNB needs it: run make notebook and add $(go env GOPATH)/bin to PATH")
	}
	files, _ := filepath.Glob("*.ipynb")
	if len(files) == 0 {
		t.Fatal("no notebooks")
	}
	out := t.TempDir()
	for _, f := range files {
		start := time.Now()
		cmd := exec.Command("jupyter", "nbconvert", "--to", "notebook", "--execute", "--output-dir", out,
			"--ExecutePreprocessor.timeout=900", f)
		cmd.Env = append(os.Environ(), "CUDAREPL_WORKSPACE="+t.TempDir())
		if log, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: nbconvert: %v\n%s", f, err, tail(string(log), 3000))
			continue
		}
		t.Logf("%s executed in %.1f s", f, time.Since(start).Seconds())
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems(f, b) {
			t.Error(p)
		}
	}
}

// problems lists what is wrong with an executed notebook: error outputs,
// anything on stderr, no image at all.
func problems(name string, b []byte) []string {
	var nb struct {
		Cells []struct {
			CellType string `json:"cell_type"`
			Outputs  []struct {
				OutputType string         `json:"output_type"`
				Name       string         `json:"name"`
				Text       any            `json:"text"`
				Data       map[string]any `json:"data"`
				EName      string         `json:"ename"`
				EValue     string         `json:"evalue"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		return []string{name + ": " + err.Error()}
	}
	var out []string
	images := 0
	for i, c := range nb.Cells {
		for _, o := range c.Outputs {
			switch {
			case o.OutputType == "error":
				out = append(out, fmt.Sprintf("%s: cell %d: error output %s: %s", name, i+1, o.EName, o.EValue))
			case o.OutputType == "stream" && o.Name == "stderr":
				out = append(out, fmt.Sprintf("%s: cell %d wrote to stderr: %v", name, i+1, o.Text))
			}
			for mime := range o.Data {
				if strings.HasPrefix(mime, "image/") {
					images++
				}
			}
		}
	}
	if images == 0 {
		out = append(out, name+": no image output")
	}
	return out
}

func TestProblems(t *testing.T) {
	tests := []struct {
		desc, nb, want string
	}{
		{"fine", `{"cells":[{"cell_type":"code","outputs":[{"output_type":"display_data","data":{"image/png":"x"}}]}]}`, ""},
		{"no image", `{"cells":[{"cell_type":"code","outputs":[{"output_type":"stream","name":"stdout","text":"hi"}]}]}`, "nb: no image output"},
		{"error", `{"cells":[{"cell_type":"code","outputs":[{"output_type":"error","ename":"E","evalue":"boom"},{"output_type":"display_data","data":{"image/svg+xml":"x"}}]}]}`, "nb: cell 1: error output E: boom"},
		{"stderr", `{"cells":[{"cell_type":"code","outputs":[{"output_type":"stream","name":"stderr","text":"error: x"},{"output_type":"display_data","data":{"image/png":"x"}}]}]}`, "nb: cell 1 wrote to stderr"},
	}
	for _, tt := range tests {
		got := strings.Join(problems("nb", []byte(tt.nb)), "; ")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: problems = %q, want %q", tt.desc, got, tt.want)
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestNotebooksValid validates every generated and executed notebook
// against the nbformat schema, with Debian's python3-nbformat (which
// Jupyter itself uses to refuse a notebook).
func TestNotebooksValid(t *testing.T) {
	python := nbformatPython()
	if python == "" {
		t.Skip("python3 with nbformat not found: install Debian's python3-nbformat to validate the notebooks")
	}
	files, _ := filepath.Glob("*.ipynb")
	executed, _ := filepath.Glob("executed/*.ipynb")
	for _, f := range append(files, executed...) {
		out, err := exec.Command(python, "-c", `import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)`, f).CombinedOutput()
		if err != nil {
			t.Errorf("%s is not a valid notebook: %v\n%s", f, err, tail(string(out), 1500))
		}
	}
}

// nbformatPython is a python3 that can import nbformat: the one on PATH,
// else Debian's; "" where neither can.
func nbformatPython() string {
	if dl.Hidden("jupyter") {
		return ""
	}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import nbformat").Run() == nil {
			return p
		}
	}
	return ""
}

// TestExecutedByRunValid: a notebook that "cudarepl notebooks run"
// executes (here in replay, without a GPU) is a valid notebook too.
func TestExecutedByRunValid(t *testing.T) {
	python := nbformatPython()
	if python == "" {
		t.Skip("python3 with nbformat not found: install Debian's python3-nbformat to validate the notebooks")
	}
	src, err := os.ReadFile("02-vector-add.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	env := lessons.Replay(errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"), lessons.View{Workspace: t.TempDir()})
	out, err := notebook.Run(src, env)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "executed.ipynb")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if log, err := exec.Command(python, "-c", "import sys, nbformat; nbformat.validate(nbformat.read(sys.argv[1], as_version=4))", path).CombinedOutput(); err != nil {
		t.Errorf("the executed notebook is not valid: %v\n%s", err, tail(string(log), 1500))
	}
}
