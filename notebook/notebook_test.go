package notebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"cudarepl/lessons"
	"cudarepl/nvrtc"
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
		// Every step with an action has its cells: the kernels it shows as
		// Try cells (the learner's to change), a sweep over sizes as a Bench
		// cell, anything else as a Step cell.
		steps, tries, checks := map[int]bool{}, 0, 0
		for _, c := range nb.Cells {
			switch s := src(c); {
			case c.CellType != "code":
			case stepCall.MatchString(s):
				n, _ := strconv.Atoi(stepCall.FindStringSubmatch(s)[2])
				steps[n] = true
			case blocksCall.MatchString(s):
				n, _ := strconv.Atoi(blocksCall.FindStringSubmatch(s)[3])
				steps[n] = true
			case withCall.MatchString(s):
				n, _ := strconv.Atoi(withCall.FindStringSubmatch(s)[5])
				steps[n] = true
			case benchCall.MatchString(s):
				n, _ := strconv.Atoi(benchCall.FindStringSubmatch(s)[3])
				steps[n] = true
			case tryCall.MatchString(s):
				tries++
			case checkCall.MatchString(s):
				checks++
			}
		}
		for i, s := range l.Steps {
			kernels := 0 // Try cells come only where every kernel the step shows can be tried
			for _, k := range l.StepKernels(i) {
				if _, _, ok := l.Tryable(k); !ok {
					kernels = 0
					break
				}
				kernels++
			}
			if s.Action != nil && s.Action.Kind() != "exercise" && !steps[i+1] && kernels == 0 {
				t.Errorf("%s: step %d (%s) has no cell", l.Slug, i+1, s.Title)
			}
			tries -= kernels
		}
		if tries != 0 {
			t.Errorf("%s: %d Try cells more than kernels shown", l.Slug, tries)
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
	env := lessons.Replay(errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"), lessons.View{Workspace: t.TempDir()})
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
	if images < 3 || html < 2 { // the checks, all passed, fold into a line of text
		t.Errorf("%d images and %d HTML tables, want at least 3 and 2", images, html)
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
	env := lessons.Replay(errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"), lessons.View{Workspace: t.TempDir()})
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
	c := &Cell{Out: &out, Env: lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out})}
	tests := []struct {
		err  error
		want string
	}{
		{c.Step("nope", 1), `no lesson "nope"`},
		{c.Step("vector-add", 99), "vector-add has steps 1 to 11, not 99"},
		{c.Check("nope", ""), `no lesson "nope"`},
		{c.Fuse("sigmoid(a +* b)", 1<<20), `fuse: column 12 of "sigmoid(a +* b)": unexpected "*" where a value is due`},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("error = %v, want %q", tt.err, tt.want)
		}
	}
}

// TestFuseInReplay: a fuse cell without a GPU shows both ways and says
// they were compiled, not run.
func TestFuseInReplay(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	var out bytes.Buffer
	c := &Cell{Out: &out, Env: lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out})}
	if err := c.Fuse("relu(a*b - c)", 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`void fused(`, "so fused can be at most 2.00× faster", "compiled, not run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTryInReplay: a kernel cell run unchanged shows the course's kernel;
// edited, the learner's version is compiled (and, without a GPU, said to
// be only compiled); a version that does not compile, or has lost the
// kernel's name, is turned down.
func TestTryInReplay(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	l, _ := lessons.Find("vector-add")
	orig, err := l.KernelSource("vadd_v1")
	if err != nil {
		t.Fatal(err)
	}
	slower := strings.Replace(orig, "if (i < n) c[i] = a[i] + b[i];", "if (i < n) { float s = a[i]; for (int r = 0; r < 8; r++) s = s * 1.0f; c[i] = s + b[i]; }", 1)
	if slower == orig {
		t.Fatal("vadd_v1 changed: the test's edit no longer applies")
	}
	tests := []struct {
		desc, code string
		block      int
		want       string // in the output
		wantErr    string
	}{
		{"unchanged", orig, 256, "vadd_v1, the course's, unchanged: 12 registers/thread, 0 B static shared memory, 0 B spilled (NVRTC ", ""},
		{"another block size", orig, 128, "vadd_v1 was not judged: judging a kernel needs a GPU", ""},
		{"a slower correct edit", slower, 256, "vadd_v1_yours.cu compiled", ""},
		{"an edit that does not compile", strings.Replace(orig, "a[i] + b[i];", "a[i] + b[i]", 1), 256, "FAILED: vadd_v1 does not compile", "does not compile"},
		{"the name lost", strings.ReplaceAll(orig, "vadd_v1", "mine"), 256, "", "must keep the kernel's name, vadd_v1"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		c := &Cell{Out: &out, Env: lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out, Workspace: t.TempDir()})}
		err := c.Try("vector-add", "vadd_v1", tt.code, tt.block, "2^26")
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: Try = %v, want %q", tt.desc, err, tt.wantErr)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%s: output lacks %q:\n%s", tt.desc, tt.want, out.String())
		}
		if tt.desc == "unchanged" && strings.Contains(out.String(), "extern") {
			t.Errorf("an unchanged cell prints the source it holds again:\n%s", out.String())
		}
	}
}

// TestRunPrintsAVerdictOnce: a kernel cell whose edit does not compile
// shows the compiler's log and the verdict once, on stdout, and nothing on
// stderr; the run still counts it as a failed cell.
func TestRunPrintsAVerdictOnce(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("a kernel that does not compile needs NVRTC to fail: %v", err)
	}
	l, _ := lessons.Find("vector-add")
	nb, _ := Generate(l)
	broken := bytes.Replace(nb, []byte("c[i] = a[i] + b[i];"), []byte("c[i] = a[i] + b[i]"), 1)
	if bytes.Equal(broken, nb) {
		t.Fatal("the vector-add notebook has no vadd_v1 cell to break")
	}
	env := lessons.Replay(errors.New("gpu: no NVIDIA driver found (libcuda.so.1)"), lessons.View{Workspace: t.TempDir()})
	out, err := Run(broken, env)
	var failed StepErrors
	if !errors.As(err, &failed) || len(failed) != 1 {
		t.Errorf("Run = %v, want one failed cell", err)
	}
	var got ipynb
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	for _, c := range got.Cells {
		for _, o := range c.Outputs {
			switch o.Name {
			case "stdout":
				stdout.WriteString(strings.Join(o.Text, ""))
			case "stderr":
				stderr.WriteString(strings.Join(o.Text, ""))
			}
		}
	}
	if n := strings.Count(stdout.String(), "vadd_v1 does not compile"); n != 1 || stderr.Len() > 0 {
		t.Errorf("the verdict is on stdout %d times, want once, and stderr holds %q, want nothing", n, stderr.String())
	}
}

// TestKernelReport: an unchanged kernel cell says what the compiler made
// of the kernel, or why it made nothing of it here.
func TestKernelReport(t *testing.T) {
	v, err := nvrtc.Version()
	if err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	tests := []struct {
		slug, kernel, want string
	}{
		{"vector-add", "vadd_v3", "vadd_v3, the course's, unchanged: "},
		{"softmax", "softmax_v1", "registers/thread"},
	}
	if strings.HasPrefix(v, "11.") { // Hopper's wgmma needs sm_90a, which NVRTC 11 cannot compile for
		tests = append(tests, struct{ slug, kernel, want string }{"matmul", "matmul_tc_v3", "its body is left out when compiled for sm_90"})
	}
	for _, tt := range tests {
		l, _ := lessons.Find(tt.slug)
		orig, err := l.KernelSource(tt.kernel)
		if err != nil {
			t.Fatal(err)
		}
		block, size, _ := l.Tryable(tt.kernel)
		var out bytes.Buffer
		c := &Cell{Out: &out, Env: lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out, Workspace: t.TempDir()})}
		if err := c.Try(tt.slug, tt.kernel, orig, block, lessons.SizeArg(size)); err != nil || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%s unchanged: %v\n%s\nwant %q", tt.kernel, err, out.String(), tt.want)
		}
	}
}

// TestEditedStepInReplay: a step that launches a kernel runs the learner's
// version and launch; without a GPU it says what it would run. Bad
// launches are turned down in one line before anything runs, and a kernel
// launched beside a library can be tried, its block left to the library.
func TestEditedStepInReplay(t *testing.T) {
	hello, _ := lessons.Find("hello-gpu")
	where, err := hello.KernelSource("where_am_i")
	if err != nil {
		t.Fatal(err)
	}
	fusion, _ := lessons.Find("cudnn-fusion")
	biasRelu, err := fusion.KernelSource("bias_relu_nhwc")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc    string
		run     func(c *Cell) error
		want    string // in the output
		wantErr string
	}{
		{"unchanged", func(c *Cell) error { return c.StepWith("hello-gpu", 2, "where_am_i", where, 128, "2048") },
			"runs where_am_i on 2048 threads, in blocks of 128", ""},
		{"a launch of its own", func(c *Cell) error { return c.StepWith("hello-gpu", 2, "where_am_i", where, 32, "100") },
			"Running the course's where_am_i: blocks of 32 threads, size 100", ""},
		{"a block too large", func(c *Cell) error { return c.StepWith("hello-gpu", 2, "where_am_i", where, 2048, "100") },
			"", "a block holds 1 to 1024"},
		{"a size of two numbers", func(c *Cell) error { return c.StepWith("hello-gpu", 2, "where_am_i", where, 128, "10x10") },
			"", "has 2 numbers; where_am_i takes 1"},
		{"a step that launches another kernel", func(c *Cell) error { return c.StepWith("hello-gpu", 1, "where_am_i", where, 128, "2048") },
			"", "does not launch where_am_i"},
		{"no such step", func(c *Cell) error { return c.StepWith("hello-gpu", 99, "where_am_i", where, 128, "2048") },
			"", "not 99"},
		{"the name lost", func(c *Cell) error {
			return c.StepWith("hello-gpu", 2, "where_am_i", strings.ReplaceAll(where, "where_am_i", "mine"), 128, "2048")
		}, "", "must keep the kernel's name"},
		{"block sizes of its own", func(c *Cell) error { return c.Blocks("vector-add", 6, 96, 192) },
			"replay shows the block sizes recorded", ""},
		{"a block size too large", func(c *Cell) error { return c.Blocks("vector-add", 6, 96, 2048) },
			"", "a block holds 1 to 1024"},
		{"no block sizes", func(c *Cell) error { return c.Blocks("vector-add", 6) }, "", "no block sizes given"},
		{"block sizes for a sweep over sizes", func(c *Cell) error { return c.Blocks("vector-add", 7, 128) },
			"", "not a sweep over block sizes"},
		{"a kernel launched beside a library, with a block", func(c *Cell) error {
			return c.Try("cudnn-fusion", "bias_relu_nhwc", biasRelu, 128, "2x8x10x10x16")
		}, "", "leave the block size at 0"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		c := &Cell{Out: &out, Env: lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out, Workspace: t.TempDir()})}
		err := tt.run(c)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %v, want %q", tt.desc, err, tt.wantErr)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%s: output lacks %q:\n%s", tt.desc, tt.want, out.String())
		}
	}
}

// TestSizesStayInTheirCell: the sizes or block sizes one cell measures at
// are that cell's; the next cell, of another sweep, runs at its own.
func TestSizesStayInTheirCell(t *testing.T) {
	var out bytes.Buffer
	env := lessons.Replay(errors.New("no GPU"), lessons.View{Out: &out, Workspace: t.TempDir()})
	c := &Cell{Out: &out, Env: env}
	if err := c.Bench("transfers", 5, "2^12"); err != nil {
		t.Fatal(err)
	}
	if env.Sizes != nil {
		t.Errorf("after a cell measured at 2^12, the next cell would run at %v", env.Sizes)
	}
	if err := c.Blocks("vector-add", 6, 96); err != nil {
		t.Fatal(err)
	}
	if env.Blocks != nil {
		t.Errorf("after a cell measured blocks of 96, the next cell would run at %v", env.Blocks)
	}
	if err := c.Bench("transfers", 8, "67108864x4"); err != nil {
		t.Errorf("the pipeline's own sizes after another sweep's: %v", err)
	}
}

// TestCellSourceAsOneString: a cell whose source is one string, as
// nbformat allows and other tools write, reads as a list of lines does.
func TestCellSourceAsOneString(t *testing.T) {
	for _, src := range []string{`"a\nb"`, `["a\n", "b"]`} {
		var c cell
		if err := json.Unmarshal([]byte(`{"cell_type": "code", "source": `+src+`}`), &c); err != nil {
			t.Fatalf("source %s: %v", src, err)
		}
		if got := strings.Join(c.Source, ""); got != "a\nb" {
			t.Errorf("source %s reads as %q, want %q", src, got, "a\nb")
		}
	}
}
