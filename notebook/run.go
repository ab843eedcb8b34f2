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
	stepCall   = regexp.MustCompile(`notebook\.Step\("([^"]+)",\s*(\d+)\)`)
	checkCall  = regexp.MustCompile("(?s)(\\w+) := `(.*?)`\\s*\\n\\s*notebook\\.Check\\(\"([^\"]+)\",\\s*(\\w+)\\)")
	tryCall    = regexp.MustCompile("(?s)block, size := (\\d+), \"([^\"]*)\"\\s*\\nkernel := `(.*?)`\\s*\\nnotebook\\.Try\\(\"([^\"]+)\", \"([^\"]+)\", kernel, block, size\\)")
	withCall   = regexp.MustCompile("(?s)block, size := (\\d+), \"([^\"]*)\"\\s*\\nkernel := `(.*?)`\\s*\\nnotebook\\.StepWith\\(\"([^\"]+)\", (\\d+), \"([^\"]+)\", kernel, block, size\\)")
	blocksCall = regexp.MustCompile(`blocks := \[\]int\{(.*?)\}\s*\nnotebook\.Blocks\("([^"]+)", (\d+), blocks\.\.\.\)`)
	benchCall  = regexp.MustCompile(`sizes := \[\]string\{(.*?)\}\s*\nnotebook\.Bench\("([^"]+)", (\d+), sizes\.\.\.\)`)
)

// Run executes a generated notebook without Jupyter: each code cell's call
// to Step or Check runs here, in env, and its outputs are recorded in the
// notebook as GoNB would show them (text streams, HTML tables, PNG
// figures). It is how notebooks run where Jupyter is not installed, such as
// a GPU machine. The setup cell has nothing to do here and is left empty;
// a cell with neither call gets a note saying it was not run.
//
// A Step cell that fails keeps its error in the notebook, as Jupyter would,
// and Run goes on with the next cell; it then returns the executed notebook
// together with a StepErrors naming every failed step (a course kernel
// that fails its checks among them, though its verdict, printed, is all
// the cell shows of it). A Check cell's failure is not one of them: the
// exercise's starter kernel is meant to fail.
func Run(data []byte, env *lessons.Env) ([]byte, error) {
	var nb ipynb
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	count := 0
	var failed StepErrors
	for i := range nb.Cells {
		c := &nb.Cells[i]
		if c.CellType != "code" {
			continue
		}
		count++
		n := count
		c.ExecutionCount = &n
		env.Reconnect() // a remote GPU whose connection a cell lost: the next cell tries again
		var err error
		c.Outputs, err = runCell(strings.Join(c.Source, ""), env)
		if err != nil {
			failed = append(failed, fmt.Errorf("cell %d: %w", n, err))
		}
	}
	out, err := encode(nb)
	if err != nil || len(failed) == 0 {
		return out, err
	}
	return out, failed
}

// StepErrors are the failures of a notebook's Step cells, one per cell.
type StepErrors []error

func (e StepErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%d of the notebook's cells failed: %s", len(e), strings.Join(msgs, "; "))
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

// runCell runs one code cell and returns its outputs, and the error of its
// Step call if it failed.
func runCell(src string, env *lessons.Env) ([]output, error) {
	if strings.Contains(src, "%goworkfix") {
		return nil, nil
	}
	rec := &recorder{}
	v := env.View // the cell's output, in a copy of env: the next cell has its own
	v.Out = rec
	v.ShowTable = func(t *lessons.Table) {
		var txt bytes.Buffer
		t.Write(&txt)
		rec.display(map[string]any{"text/html": lines(t.HTML()), "text/plain": lines(txt.String())})
	}
	v.ShowFigure = func(f plots.Figure) error {
		png, err := plots.Encode(f, "png")
		if err != nil {
			return err
		}
		rec.display(map[string]any{"image/png": base64.StdEncoding.EncodeToString(png), "text/plain": []string{"<figure>"}})
		return nil
	}
	c := &Cell{Out: rec, Env: env.WithView(v)}
	var err, stepErr error
	switch m, k, tr, w, b, bl := stepCall.FindStringSubmatch(src), checkCall.FindStringSubmatch(src), tryCall.FindStringSubmatch(src),
		withCall.FindStringSubmatch(src), benchCall.FindStringSubmatch(src), blocksCall.FindStringSubmatch(src); {
	case k != nil && k[1] == k[4]: // kernel := `…` or schedule := `…`, checked
		err = answered(c.Check(k[3], k[2])) // as the package's Check has it
	case tr != nil:
		block, _ := strconv.Atoi(tr[1])
		err = c.Try(tr[4], tr[5], tr[3], block, tr[2])
		if err != nil {
			stepErr = fmt.Errorf("%s kernel %s: %w", tr[4], tr[5], err)
		}
	case w != nil:
		block, _ := strconv.Atoi(w[1])
		step, _ := strconv.Atoi(w[5])
		err = c.StepWith(w[4], step, w[6], w[3], block, w[2])
		if err != nil {
			stepErr = fmt.Errorf("%s step %d: %w", w[4], step, err)
		}
	case b != nil:
		step, _ := strconv.Atoi(b[3])
		var sizes []string
		for _, q := range strings.Split(b[1], ",") {
			if s, err := strconv.Unquote(strings.TrimSpace(q)); err == nil {
				sizes = append(sizes, s)
			}
		}
		err = c.Bench(b[2], step, sizes...)
		if err != nil {
			stepErr = fmt.Errorf("%s step %d: %w", b[2], step, err)
		}
	case bl != nil:
		step, _ := strconv.Atoi(bl[3])
		var blocks []int
		for _, q := range strings.Split(bl[1], ",") {
			if b, err := strconv.Atoi(strings.TrimSpace(q)); err == nil {
				blocks = append(blocks, b)
			}
		}
		err = c.Blocks(bl[2], step, blocks...)
		if err != nil {
			stepErr = fmt.Errorf("%s step %d: %w", bl[2], step, err)
		}
	case m != nil:
		step, _ := strconv.Atoi(m[2])
		err = c.Step(m[1], step)
		if err != nil {
			stepErr = fmt.Errorf("%s step %d: %w", m[1], step, err)
		}
	default:
		fmt.Fprintln(rec, "(not run: outside GoNB only the course's notebook calls run)")
	}
	rec.flush()
	if err = answered(err); err != nil { // a failed verdict has printed itself, as in GoNB
		rec.outputs = append(rec.outputs, output{OutputType: "stream", Name: "stderr", Text: []string{"error: " + lessons.Message(err) + "\n"}})
	}
	return rec.outputs, stepErr
}
