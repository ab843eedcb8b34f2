package notebook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"cudarepl/lessons"
)

// ipynb is the part of nbformat 4.5 that the notebooks use.
type ipynb struct {
	Cells         []cell         `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

type cell struct {
	CellType       string         `json:"cell_type"`
	ExecutionCount *int           `json:"execution_count"` // code cells only; null until run
	ID             string         `json:"id"`
	Metadata       map[string]any `json:"metadata"`
	Outputs        []output       `json:"outputs"` // code cells only
	Source         textLines      `json:"source"`
}

// textLines is a notebook's multi-line text: written as a list of lines, read
// as one string too, which nbformat also allows (a notebook saved by
// another tool).
type textLines []string

// UnmarshalJSON reads a list of strings, or one string.
func (l *textLines) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = textLines{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// MarshalJSON writes execution_count and outputs on code cells, where
// nbformat requires them, and leaves them off Markdown cells, where it
// forbids them.
func (c cell) MarshalJSON() ([]byte, error) {
	type plain cell // no MarshalJSON
	if c.CellType == "code" {
		if c.Outputs == nil {
			c.Outputs = []output{}
		}
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		CellType string         `json:"cell_type"`
		ID       string         `json:"id"`
		Metadata map[string]any `json:"metadata"`
		Source   textLines      `json:"source"`
	}{c.CellType, c.ID, c.Metadata, c.Source})
}

// output is one cell output: a stream, or display data.
type output struct {
	OutputType string         `json:"output_type"`
	Name       string         `json:"name,omitempty"` // stdout, stderr
	Text       []string       `json:"text,omitempty"`
	Data       map[string]any `json:"data,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// MarshalJSON writes the fields nbformat 4.5 requires of each kind of
// output, and no others: a stream has a name and text; display data has
// data and metadata, even when the metadata is empty (without it, Jupyter
// and nbconvert reject the notebook).
func (o output) MarshalJSON() ([]byte, error) {
	if o.OutputType == "stream" {
		return json.Marshal(struct {
			OutputType string   `json:"output_type"`
			Name       string   `json:"name"`
			Text       []string `json:"text"`
		}{o.OutputType, o.Name, o.Text})
	}
	if o.Metadata == nil {
		o.Metadata = map[string]any{}
	}
	return json.Marshal(struct {
		OutputType string         `json:"output_type"`
		Data       map[string]any `json:"data"`
		Metadata   map[string]any `json:"metadata"`
	}{o.OutputType, o.Data, o.Metadata})
}

// setupCell makes the checkout's module importable from the notebook: GoNB
// builds each cell in a module of its own, so a go.work naming the checkout
// (found from $GONB_DIR, the notebook's folder) and %goworkfix, which turns
// it into a replace rule, point "cudarepl" at this checkout. Its first line
// says so to the learner, as a shell comment: a Go comment would be a cell
// of Go code for GoNB to build.
const setupCell = `!*rm -f go.work && go work init && go work use . "${GONB_DIR}/.."  # make this checkout's cudarepl importable here
%goworkfix`

// FileName is the notebook file of lesson l, e.g. "02-vector-add.ipynb".
func FileName(l *lessons.Lesson) string { return l.Folder() + ".ipynb" }

// Generate returns the notebook of lesson l as nbformat JSON. The same
// lesson always gives the same bytes.
func Generate(l *lessons.Lesson) ([]byte, error) {
	nb := ipynb{
		Metadata: map[string]any{
			"kernelspec":    map[string]any{"display_name": "Go (gonb)", "language": "go", "name": "gonb"},
			"language_info": map[string]any{"name": "go"},
		},
		NBFormat: 4, NBFormatMinor: 5,
	}
	add := func(kind string, src string) {
		c := cell{CellType: kind, ID: fmt.Sprintf("%s-%02d", l.Slug, len(nb.Cells)+1), Metadata: map[string]any{}, Source: lines(src)}
		nb.Cells = append(nb.Cells, c)
	}
	add("markdown", fmt.Sprintf("# Lesson %d · %s\n\n%s\n\n"+
		"Run the cells in order. Each code cell runs one step on your GPU; without one, it replays the results "+
		"recorded with the lesson on a reference GPU and says so. The first cell makes this checkout importable.",
		l.Number, l.Title, l.Intro))
	add("code", setupCell)
	for i, s := range l.Steps {
		add("markdown", fmt.Sprintf("## %s\n\n%s", s.Title, s.Prose))
		switch {
		case s.Action == nil:
		case s.Action.Kind() == "exercise" && l.Exercise != nil:
			x := l.Exercise
			if strings.Contains(x.Starter, "`") {
				return nil, fmt.Errorf("notebook: %s: the exercise's starter holds a backquote, which cannot go in a Go raw string", l.Slug)
			}
			what, how := cmp.Or(x.What, "kernel"), "it is compiled with NVRTC and judged"
			if x.Plan != nil {
				how = "it is read, checked and run"
			}
			add("markdown", fmt.Sprintf("%s Edit the %s in the Go string below and run the cell: %s exactly as `cudarepl check` judges it, against `%s`. "+
				"The starter is expected to fail its checks until the TODOs are done.", x.Task, what, how, x.Like))
			add("code", fmt.Sprintf("import \"cudarepl/notebook\"\n\n%%%%\n%s := `%s`\nnotebook.Check(%q, %s)",
				what, strings.TrimRight(x.Starter, "\n"), l.Slug, what))
		default:
			cells, err := stepCells(l, i)
			if err != nil {
				return nil, err
			}
			for _, c := range cells {
				add("code", c)
			}
		}
	}
	return encode(nb)
}

// stepCells are the code cells of step i: one per kernel it shows or
// launches, holding the kernel's source and launch as Go values for the
// learner to change; for a sweep over sizes, its sizes; otherwise one call
// that runs the step.
func stepCells(l *lessons.Lesson, i int) ([]string, error) {
	const head = "import \"cudarepl/notebook\"\n\n%%\n"
	var cells []string
	if kernel, block, size, ok := l.StepLaunch(i); ok {
		src, err := editable(l, kernel)
		if err != nil {
			return nil, err
		}
		return []string{head + fmt.Sprintf("// The kernel this step runs, the course's %s, and its launch. Change them and run the cell:\n"+
			"// the step runs your version and its checks judge it.\n"+
			"block, size := %d, %q\nkernel := `%s`\nnotebook.StepWith(%q, %d, %q, kernel, block, size)",
			kernel, block, lessons.SizeArg(size), src, l.Slug, i+1, kernel)}, nil
	}
	for _, name := range l.StepKernels(i) {
		block, size, ok := l.Tryable(name)
		if !ok {
			cells = nil
			break
		}
		src, err := editable(l, name)
		if err != nil {
			return nil, err
		}
		change := "the kernel, the block size or the size"
		if block == 0 {
			change = "the kernel or the size (the version that launches it picks the block: leave it 0)"
		}
		cells = append(cells, head+fmt.Sprintf("// The course's %s. Change %s and run the cell:\n"+
			"// your version is checked as the course's is and timed beside it. Unchanged, the cell says what\n"+
			"// the compiler made of it: registers, shared memory and spills.\n"+
			"block, size := %d, %q\nkernel := `%s`\nnotebook.Try(%q, %q, kernel, block, size)",
			name, change, block, lessons.SizeArg(size), src, l.Slug, name))
	}
	if len(cells) > 0 {
		return cells, nil
	}
	if sizes, ok := l.StepSizes(i); ok {
		args := make([]string, len(sizes))
		for j, s := range sizes {
			args[j] = fmt.Sprintf("%q", lessons.SizeArg(s))
		}
		return []string{head + fmt.Sprintf("// The sizes this step measures: change them and run the cell to measure others.\n"+
			"sizes := []string{%s}\nnotebook.Bench(%q, %d, sizes...)", strings.Join(args, ", "), l.Slug, i+1)}, nil
	}
	if blocks, size, ok := l.StepBlocks(i); ok {
		args := make([]string, len(blocks))
		for j, b := range blocks {
			args[j] = fmt.Sprint(b)
		}
		return []string{head + fmt.Sprintf("// The threads per block this step measures, at %s: change them and run the cell to measure others.\n"+
			"blocks := []int{%s}\nnotebook.Blocks(%q, %d, blocks...)", lessons.SizeArg(size), strings.Join(args, ", "), l.Slug, i+1)}, nil
	}
	return []string{head + fmt.Sprintf("notebook.Step(%q, %d)", l.Slug, i+1)}, nil
}

// editable is kernel name's source as a cell holds it, in a Go raw string.
func editable(l *lessons.Lesson, name string) (string, error) {
	src, err := l.KernelSource(name)
	if err != nil {
		return "", err
	}
	if strings.Contains(src, "`") {
		return "", fmt.Errorf("notebook: %s: kernel %s holds a backquote, which cannot go in a Go raw string", l.Slug, name)
	}
	return src, nil
}

// encode writes nb as Jupyter does: one-space indents, HTML left as is.
func encode(nb ipynb) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(nb); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// lines splits s as nbformat stores sources: lines keeping their "\n",
// the last without one.
func lines(s string) []string {
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}
