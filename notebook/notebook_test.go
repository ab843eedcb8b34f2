package notebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cudarepl/lessons"
)

// TestNotebooksUpToDate fails when a lesson changed and its notebook was
// not regenerated.
func TestNotebooksUpToDate(t *testing.T) {
	for _, l := range lessons.All() {
		want, err := Generate(l)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "notebooks", FileName(l))
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v): run 'go run ./cmd/cudarepl notebooks'", path, err)
		}
	}
}

func TestGenerateShape(t *testing.T) {
	for _, l := range lessons.All() {
		b, err := Generate(l)
		if err != nil {
			t.Fatal(err)
		}
		var nb ipynb
		if err := json.Unmarshal(b, &nb); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "type 'check'") || strings.Contains(string(b), "type 'edit'") {
			t.Errorf("%s: the notebook tells the learner to type a REPL command", l.Slug)
		}
		src := func(c cell) string { return strings.Join(c.Source, "") }
		if src(nb.Cells[1]) != setupCell {
			t.Errorf("%s: the second cell is not the setup cell", l.Slug)
		}
		steps, checks := 0, 0
		for _, c := range nb.Cells {
			switch {
			case c.CellType == "code" && stepCall.MatchString(src(c)):
				steps++
			case c.CellType == "code" && checkCall.MatchString(src(c)):
				checks++
			}
		}
		actions := 0
		for _, s := range l.Steps {
			if s.Action != nil && s.Action.Kind() != "exercise" {
				actions++
			}
		}
		if steps != actions {
			t.Errorf("%s: %d Step cells for %d steps with an action", l.Slug, steps, actions)
		}
		if want := map[bool]int{true: 1, false: 0}[l.Exercise != nil]; checks != want {
			t.Errorf("%s: %d cells where the learner edits a kernel, want %d", l.Slug, checks, want)
		}
		if nb.Metadata["kernelspec"].(map[string]any)["name"] != "gonb" {
			t.Errorf("%s: kernel is not gonb", l.Slug)
		}
	}
}

// TestRunReplay executes a notebook in this process without a GPU: every
// cell runs, figures come out as PNG, and nothing goes to stderr.
func TestRunReplay(t *testing.T) {
	l, _ := lessons.Find("vector-add")
	nb, _ := Generate(l)
	env := &lessons.Env{NoGPU: errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"), Workspace: t.TempDir()}
	out, err := Run(nb, env)
	if err != nil {
		t.Fatal(err)
	}
	var got ipynb
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	images, html := 0, 0
	for _, c := range got.Cells {
		if c.CellType == "code" && c.ExecutionCount == nil {
			t.Errorf("cell %s has no execution count", c.ID)
		}
		for _, o := range c.Outputs {
			if o.Name == "stderr" {
				t.Errorf("cell %s wrote to stderr: %q", c.ID, o.Text)
			}
			if _, ok := o.Data["image/png"]; ok {
				images++
			}
			if _, ok := o.Data["text/html"]; ok {
				html++
			}
		}
	}
	if images < 3 || html < 3 {
		t.Errorf("%d images and %d HTML tables, want at least 3 of each", images, html)
	}
}

// TestRunReportsFailedSteps: a failing Step cell keeps its error in the
// executed notebook, the cells after it still run, and Run says which failed.
func TestRunReportsFailedSteps(t *testing.T) {
	l, _ := lessons.Find("vector-add")
	nb, _ := Generate(l)
	broken := bytes.Replace(nb, []byte(`notebook.Step(\"vector-add\", 2)`), []byte(`notebook.Step(\"vector-add\", 99)`), 1)
	if bytes.Equal(broken, nb) {
		t.Fatal("the vector-add notebook has no step-2 cell to break")
	}
	env := &lessons.Env{NoGPU: errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"), Workspace: t.TempDir()}
	out, err := Run(broken, env)
	var failed StepErrors
	if !errors.As(err, &failed) || len(failed) != 1 || !strings.Contains(err.Error(), "vector-add step 99") {
		t.Fatalf("Run = %v, want one failed step, vector-add step 99", err)
	}
	var got ipynb
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the executed notebook does not decode: %v", err)
	}
	stderr, last := 0, 0
	for _, c := range got.Cells {
		for _, o := range c.Outputs {
			if o.Name == "stderr" {
				stderr++
			}
		}
		if c.CellType == "code" && c.ExecutionCount != nil {
			last = *c.ExecutionCount
		}
	}
	if stderr != 1 || last < 3 {
		t.Errorf("%d cells with an error and %d cells run, want 1 and all of them", stderr, last)
	}
}

func TestStepErrors(t *testing.T) {
	var out bytes.Buffer
	c := &Cell{Out: &out, Env: &lessons.Env{Out: &out, NoGPU: errors.New("no GPU")}}
	tests := []struct {
		err  error
		want string
	}{
		{c.Step("nope", 1), `no lesson "nope"`},
		{c.Step("vector-add", 99), "vector-add has steps 1 to 8, not 99"},
		{c.Check("nope", ""), `no lesson "nope"`},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("error = %v, want %q", tt.err, tt.want)
		}
	}
}
