package notebook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"cudarepl/lessons"
	"cudarepl/plots"
)

var (
	stepCall  = regexp.MustCompile(`notebook\.Step\("([^"]+)",\s*(\d+)\)`)
	checkCall = regexp.MustCompile("(?s)kernel := `(.*?)`\\s*\\n\\s*notebook\\.Check\\(\"([^\"]+)\",\\s*kernel\\)")
)

// Run executes a generated notebook without Jupyter: each code cell's call
// to Step or Check runs here, in env, and its outputs are recorded in the
// notebook as GoNB would show them (text streams, HTML tables, PNG
// figures). It is how notebooks run where Jupyter is not installed, such as
// a GPU machine. The setup cell has nothing to do here and is left empty;
// a cell with neither call gets a note saying it was not run.
func Run(data []byte, env *lessons.Env) ([]byte, error) {
	var nb ipynb
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	count := 0
	for i := range nb.Cells {
		c := &nb.Cells[i]
		if c.CellType != "code" {
			continue
		}
		count++
		n := count
		c.ExecutionCount = &n
		c.Outputs = runCell(strings.Join(c.Source, ""), env)
	}
	return encode(nb)
}

// recorder collects a cell's outputs in the order they happen.
type recorder struct {
	text    bytes.Buffer
	outputs []output
}

func (r *recorder) Write(p []byte) (int, error) { return r.text.Write(p) }

// flush turns pending text into a stdout stream output.
func (r *recorder) flush() {
	if r.text.Len() > 0 {
		r.outputs = append(r.outputs, output{OutputType: "stream", Name: "stdout", Text: lines(r.text.String())})
		r.text.Reset()
	}
}

func (r *recorder) display(data map[string]any) {
	r.flush()
	r.outputs = append(r.outputs, output{OutputType: "display_data", Data: data, Metadata: map[string]any{}})
}

func runCell(src string, env *lessons.Env) []output {
	if strings.Contains(src, "%goworkfix") {
		return nil
	}
	rec := &recorder{}
	env.Out = rec
	env.ShowTable = func(t *lessons.Table) {
		var txt bytes.Buffer
		t.Write(&txt)
		rec.display(map[string]any{"text/html": lines(t.HTML()), "text/plain": lines(txt.String())})
	}
	env.ShowFigure = func(f plots.Figure) error {
		png, err := plots.Encode(f, "png")
		if err != nil {
			return err
		}
		rec.display(map[string]any{"image/png": base64.StdEncoding.EncodeToString(png), "text/plain": []string{"<figure>"}})
		return nil
	}
	c := &Cell{Out: rec, Env: env}
	var err error
	switch m, k := stepCall.FindStringSubmatch(src), checkCall.FindStringSubmatch(src); {
	case k != nil:
		err = c.Check(k[2], k[1])
	case m != nil:
		step, _ := strconv.Atoi(m[2])
		err = c.Step(m[1], step)
	default:
		fmt.Fprintln(rec, "(not run: outside GoNB only notebook.Step and notebook.Check cells run)")
	}
	rec.flush()
	if err != nil {
		rec.outputs = append(rec.outputs, output{OutputType: "stream", Name: "stderr", Text: []string{"error: " + err.Error() + "\n"}})
	}
	return rec.outputs
}
