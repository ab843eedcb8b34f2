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
	"slices"
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
// under -short, and where Jupyter, nbconvert, the GoNB kernel or goimports
// is missing: the reason names which, and what provides it.
func TestExecuteNotebooks(t *testing.T) {
	if testing.Short() {
		t.Skip("executing notebooks takes minutes; skipped under -short")
	}
	env, missing := jupyterSetup()
	if missing != "" {
		t.Skip(missing)
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
		cmd.Env = append(env, "CUDAREPL_WORKSPACE="+t.TempDir())
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

// jupyterSetup says what executing the notebooks here lacks, naming the
// first missing piece and what provides it, or returns the environment to
// run nbconvert in: this one, with the folder that holds goimports on
// PATH where make notebook put it off PATH (GoNB runs goimports).
// Nothing here needs 'jupyter kernelspec' (Debian's jupyter-client): the
// GoNB kernel is looked for where Jupyter looks, its data folders.
func jupyterSetup() (env []string, missing string) {
	const install = "install Debian's jupyter-notebook and jupyter-nbconvert (the README's Notebooks section), then run make notebook"
	if dl.Hidden("jupyter") {
		return nil, fmt.Sprintf("Jupyter is hidden by %s=%s", dl.HideEnv, os.Getenv(dl.HideEnv))
	}
	if _, err := exec.LookPath("jupyter"); err != nil {
		return nil, "jupyter not found: " + install
	}
	if err := exec.Command("jupyter", "nbconvert", "--version").Run(); err != nil {
		return nil, "jupyter is installed, but not jupyter nbconvert, which executes the notebooks: install Debian's jupyter-nbconvert"
	}
	var paths struct{ Data []string }
	if out, err := exec.Command("jupyter", "--paths", "--json").Output(); err != nil || json.Unmarshal(out, &paths) != nil {
		return nil, fmt.Sprintf("jupyter --paths --json does not say where Jupyter keeps its kernels (%v): is jupyter-core too old?", err)
	}
	spec := ""
	for _, d := range paths.Data {
		if p := filepath.Join(d, "kernels", "gonb", "kernel.json"); spec == "" && fileExists(p) {
			spec = p
		}
	}
	if spec == "" {
		return nil, fmt.Sprintf("the GoNB kernel is not installed (no kernels/gonb/kernel.json in Jupyter's data folders, %s): run make notebook",
			strings.Join(paths.Data, ", "))
	}
	var kernel struct {
		Argv []string          `json:"argv"`
		Env  map[string]string `json:"env"`
	}
	if b, err := os.ReadFile(spec); err != nil || json.Unmarshal(b, &kernel) != nil || len(kernel.Argv) == 0 {
		return nil, fmt.Sprintf("%s is not a kernel spec Jupyter can start: run make notebook", spec)
	}
	if !fileExists(kernel.Argv[0]) {
		return nil, fmt.Sprintf("the GoNB kernel (%s) starts %s, which is not there: run make notebook", spec, kernel.Argv[0])
	}
	env = os.Environ()
	if _, err := exec.LookPath("goimports"); err != nil {
		bin := goBin()
		if !fileExists(filepath.Join(bin, "goimports")) {
			return nil, "goimports is not installed, and GoNB needs it: run make notebook"
		}
		env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")) // the last PATH is the one that counts
	}
	return env, ""
}

// goBin is where go install puts programs: $GOBIN, else the first
// GOPATH's bin.
func goBin() string {
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		return ""
	}
	// One line each, GOBIN's first and empty where it is unset: trimming
	// the whole output would make GOPATH's line the first.
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
		return strings.TrimSpace(lines[0])
	}
	if len(lines) > 1 {
		return filepath.Join(filepath.SplitList(strings.TrimSpace(lines[1]))[0], "bin")
	}
	return ""
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
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

// TestJupyterSetup: each thing executing the notebooks needs, missing,
// is named with what provides it, and a goimports that make notebook put
// off PATH is found where it put it. A fake jupyter plays each machine.
func TestJupyterSetup(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	fake, data, gobin := t.TempDir(), t.TempDir(), t.TempDir()
	script := "#!/bin/sh\ncase \"$1\" in\n" +
		"nbconvert) [ -n \"$FAKE_NBCONVERT\" ] && exit 0; echo 'Jupyter command `jupyter-nbconvert` not found.' >&2; exit 1;;\n" +
		"--paths) echo \"{\\\"data\\\": [\\\"$FAKE_DATA\\\"]}\";;\n" +
		"*) exit 1;;\nesac\n"
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(data, "kernels", "gonb", "kernel.json")
	gonb := filepath.Join(gobin, "gonb")
	tests := []struct {
		desc    string
		setup   func()
		env     []string // more variables
		missing string   // in the reason; "" when nothing is missing
	}{
		{"no jupyter", func() {}, nil, "jupyter not found: install Debian's jupyter-notebook and jupyter-nbconvert"},
		{"jupyter without nbconvert", func() { write(filepath.Join(fake, "jupyter"), script) }, nil,
			"install Debian's jupyter-nbconvert"},
		{"no GoNB kernel", func() {}, []string{"FAKE_NBCONVERT=1"}, "the GoNB kernel is not installed (no kernels/gonb/kernel.json in Jupyter's data folders, " + data + "): run make notebook"},
		{"a kernel whose program is gone", func() { write(spec, `{"argv": ["`+gonb+`", "--kernel", "{connection_file}"]}`) },
			[]string{"FAKE_NBCONVERT=1"}, "starts " + gonb + ", which is not there: run make notebook"},
		{"no goimports", func() { write(gonb, "#!/bin/sh\n") }, []string{"FAKE_NBCONVERT=1"}, "goimports is not installed, and GoNB needs it: run make notebook"},
		{"goimports off PATH, where make notebook put it", func() { write(filepath.Join(gobin, "goimports"), "#!/bin/sh\n") },
			[]string{"FAKE_NBCONVERT=1"}, ""},
	}
	for _, tt := range tests {
		tt.setup()
		t.Setenv("PATH", fake+string(os.PathListSeparator)+filepath.Dir(goCmd))
		t.Setenv("CUDAREPL_HIDE", "")
		t.Setenv("GOBIN", gobin)
		t.Setenv("FAKE_DATA", data)
		t.Setenv("FAKE_NBCONVERT", "")
		for _, kv := range tt.env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		env, missing := jupyterSetup()
		switch {
		case tt.missing == "" && missing != "":
			t.Errorf("%s: missing %q, want nothing", tt.desc, missing)
		case tt.missing != "" && !strings.Contains(missing, tt.missing):
			t.Errorf("%s: missing %q, want %q", tt.desc, missing, tt.missing)
		case tt.missing == "" && !slices.Contains(env, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH")):
			t.Errorf("%s: nbconvert's PATH does not start with %s, where goimports is", tt.desc, gobin)
		}
	}
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
	python := nbformatPython(t)
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
// else Debian's. Where neither can, or Jupyter is hidden, it skips t and
// says which.
func nbformatPython(t *testing.T) string {
	t.Helper()
	if dl.Hidden("jupyter") {
		t.Skipf("Jupyter is hidden by %s=%s", dl.HideEnv, os.Getenv(dl.HideEnv))
	}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import nbformat").Run() == nil {
			return p
		}
	}
	t.Skip("python3 with nbformat not found: install Debian's python3-nbformat to validate the notebooks")
	return ""
}

// TestExecutedByRunValid: a notebook that "cudarepl notebooks run"
// executes (here in replay, without a GPU) is a valid notebook too.
func TestExecutedByRunValid(t *testing.T) {
	python := nbformatPython(t)
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

// TestGoBin: where go install puts a program, GOBIN or the first GOPATH's
// bin (GOBIN unset prints an empty first line, which must stay first).
func TestGoBin(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ gobin, gopath, want string }{
		{"", dir, filepath.Join(dir, "bin")},
		{filepath.Join(dir, "b"), dir, filepath.Join(dir, "b")},
	} {
		t.Setenv("GOBIN", c.gobin)
		t.Setenv("GOPATH", c.gopath)
		if got := goBin(); got != c.want {
			t.Errorf("GOBIN=%q GOPATH=%q: goBin() = %q, want %q", c.gobin, c.gopath, got, c.want)
		}
	}
}
