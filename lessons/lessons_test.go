package lessons

import (
	"bytes"
	"embed"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseMarkdown(t *testing.T) {
	tests := []struct {
		desc      string
		md        string
		wantTitle string
		wantSteps []string
		wantErr   string
	}{
		{"two steps", "# T\n\nIn this lesson you will:\n- x\n\n## Kernel\n\ntext\n\n## Launch\n\nmore\n", "T", []string{"Kernel", "Launch"}, ""},
		{"heading in a code fence", "# T\n\n## A\n\n```\n## not a step\n```\n", "T", []string{"A"}, ""},
		{"no title", "## A\n\ntext\n", "", nil, "no \"# \" title"},
		{"no steps", "# T\n\ntext\n", "", nil, "no \"## \" steps"},
		{"empty step", "# T\n\n## A\n\n## B\n\ntext\n", "", nil, `step "A" has no prose`},
	}
	for _, tt := range tests {
		title, _, steps, err := parseMarkdown(tt.md)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.desc, err, tt.wantErr)
			}
			continue
		}
		var names []string
		for _, s := range steps {
			names = append(names, s.Title)
		}
		if err != nil || title != tt.wantTitle || strings.Join(names, "|") != strings.Join(tt.wantSteps, "|") {
			t.Errorf("%s: parseMarkdown = %q, %q, %v; want %q, %q", tt.desc, title, names, err, tt.wantTitle, tt.wantSteps)
		}
	}
}

func TestBuildRejectsActionWithoutStep(t *testing.T) {
	_, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n")}}, Actions: map[string]Action{"B": &ShowKernel{}}})
	if err == nil || !strings.Contains(err.Error(), `step "B", which lesson.md does not have`) {
		t.Errorf("build = %v, want a missing-step error", err)
	}
}

// TestBuildReadsFiles: a lesson's prose, its exercise's starter (named
// for the exercise's extension), its planted kernels and its recorded
// results all come from the one embedded folder; a lesson with no
// exercise, no results and no testdata needs only lesson.md.
func TestBuildReadsFiles(t *testing.T) {
	const md = "# T\n\nIn this lesson you will:\n- x\n\n## A\n\ntext\n"
	results := `{"schema":"cudarepl-results/1","results":[{"lesson":"x","step":"A","kind":"bench","variant":"v","size":"n=1","dims":[1],"dtype":"float32","gpu":"G","driver":"","cuda":"","date":"2026-11-22","mode":"live"}]}`
	full := fstest.MapFS{
		"lesson.md":               {Data: []byte(md)},
		"exercise.sched":          {Data: []byte("starter\n")},
		"results/run.json":        {Data: []byte(results)},
		"testdata/solution.sched": {Data: []byte("solution\n")},
	}
	tests := []struct {
		desc    string
		def     Def
		wantErr string
	}{
		{"everything", Def{Slug: "x", Files: full, Exercise: &Exercise{File: "mine.sched"}, Planted: []Planted{{File: "solution.sched"}}}, ""},
		{"prose only", Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte(md)}}}, ""},
		{"no files", Def{Slug: "x"}, "the Def has no Files"},
		{"no lesson.md", Def{Slug: "x", Files: fstest.MapFS{}}, "lesson.md"},
		{"no starter", Def{Slug: "x", Files: full, Exercise: &Exercise{File: "mine.cu"}}, "the exercise's starter, exercise.cu, is not in the Def's Files"},
		{"no planted kernel", Def{Slug: "x", Files: full, Planted: []Planted{{File: "other.cu"}}}, "planted kernel other.cu is not in the embedded testdata"},
	}
	for _, tt := range tests {
		l, err := build(tt.def)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: build = %v, want %q", tt.desc, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: build = %v", tt.desc, err)
			continue
		}
		if l.Title != "T" || len(l.Steps) != 1 {
			t.Errorf("%s: title %q, %d steps; want T, 1", tt.desc, l.Title, len(l.Steps))
		}
		if tt.def.Exercise == nil {
			continue
		}
		if l.Exercise != tt.def.Exercise || l.Exercise.Starter != "starter\n" {
			t.Errorf("%s: starter %q, want it read from exercise.sched into the Exercise the Def was given", tt.desc, l.Exercise.Starter)
		}
		if code, err := l.PlantedCode(Planted{File: "solution.sched"}); err != nil || code != "solution\n" {
			t.Errorf("%s: PlantedCode = %q, %v", tt.desc, code, err)
		}
		if rs := l.Recorded().Results; len(rs) != 1 || rs[0].Mode != "replayed" {
			t.Errorf("%s: recorded %+v, want the one result, replayed", tt.desc, rs)
		}
	}
}

func TestFolder(t *testing.T) {
	if got := (&Lesson{Number: 2, Slug: "vector-add"}).Folder(); got != "02-vector-add" {
		t.Errorf("Folder = %q, want 02-vector-add", got)
	}
}

func TestSizeString(t *testing.T) {
	for _, tt := range []struct {
		s    Size
		want string
	}{{Size{1000}, "n=1000"}, {Size{1000, 1003, 517}, "1000×1003×517"}} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%v.String() = %q, want %q", []int(tt.s), got, tt.want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestBenchTableGolden(t *testing.T) {
	p := &Problem{Name: "vector add", Unit: "GB/s", Ceiling: CeilingCopy}
	rs := []Result{
		{Variant: "vadd_v1", Size: "n=67108864", Block: 256, MedianMs: 0.3012, Throughput: 2673.5, Unit: "GB/s", Ceiling: 2918.8, CeilingName: "device-to-device copy", PeakMem: 805310464,
			Peak: 3352.3, PeakName: "DRAM bandwidth, 2 × 2619 MHz memory clock × 5120-bit bus"},
		{Variant: "vadd_v3", Size: "n=67108864", Block: 256, MedianMs: 0.2690, Throughput: 2993.8, Unit: "GB/s", Ceiling: 2918.8, CeilingName: "device-to-device copy", PeakMem: 805310464,
			Peak: 3352.3, PeakName: "DRAM bandwidth, 2 × 2619 MHz memory clock × 5120-bit bus"},
	}
	var b bytes.Buffer
	benchTable(p, rs).Write(&b)
	checkTable([]Result{{Variant: "vadd_v1", Size: "n=1023", MaxRelErr: 5.9e-8, Tolerance: 1e-5, Passed: true}, {Variant: "vadd_v2", Size: "n=3", MaxRelErr: math.Inf(1), Tolerance: 1e-5}}).Write(&b)
	golden(t, "tables.golden", b.Bytes())
	html := benchTable(p, rs).HTML()
	for _, want := range []string{`<th style="text-align:right">GB/s</th>`, `<td style="text-align:left">vadd_v1</td>`, "<p>baseline: device-to-device copy", "<p>peak: 3352 GB/s, the DRAM bandwidth"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML table lacks %q:\n%s", want, html)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(path, got, 0o644)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update if meant):\n%s", name, got)
	}
}

//go:embed testdata/results
var sampleResults embed.FS

func TestLoadRecorded(t *testing.T) {
	sub, _ := fs.Sub(sampleResults, "testdata")
	set, err := loadRecorded(sub)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Results) != 1 || set.Results[0].Mode != "replayed" || set.Source() != "replayed from Test GPU, 2026-11-22" {
		t.Errorf("loadRecorded = %+v, source %q", set.Results, set.Source())
	}
	if _, err := ParseResults([]byte(`{"schema":"other","results":[]}`)); err == nil || !strings.Contains(err.Error(), `schema "other"`) {
		t.Errorf("ParseResults(other schema) = %v", err)
	}
	if _, err := ParseResults([]byte(`{"schema":"cudarepl-results/1","results":[{"speed":1}]}`)); err == nil {
		t.Errorf("ParseResults accepted an unknown field")
	}
}

func TestExercisePrepareKeepsLearnersWork(t *testing.T) {
	env := Replay(nil, View{Workspace: t.TempDir(), Out: &bytes.Buffer{}})
	l := &Lesson{Slug: "x"}
	x := &Exercise{File: "k.cu", Starter: "starter"}
	path, created, err := x.Prepare(env, l)
	if err != nil || !created {
		t.Fatalf("first Prepare = %v, %v", created, err)
	}
	os.WriteFile(path, []byte("my work"), 0o644)
	if _, created, _ := x.Prepare(env, l); created {
		t.Error("second Prepare claims to have created the file")
	}
	if b, _ := os.ReadFile(path); string(b) != "my work" {
		t.Errorf("Prepare overwrote the learner's file: %q", b)
	}
}

func TestFeatureArch(t *testing.T) {
	for _, tt := range []struct {
		body, want string
	}{
		{"__global__ void k() {\n#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n    wgmma();\n#endif\n}", "sm_90a"},
		{"__global__ void k() {\n#if __CUDA_ARCH__ >= 800\n    cp_async();\n#endif\n}", ""},
		{"__global__ void k() {}", ""},
	} {
		if got := featureArch(tt.body); got != tt.want {
			t.Errorf("featureArch(%q) = %q, want %q", tt.body, got, tt.want)
		}
		if tt.want != "" && archNames[tt.want] == "" {
			t.Errorf("archNames has no description of %s", tt.want)
		}
	}
}

func TestSizeArgRoundTrip(t *testing.T) {
	for _, s := range []Size{{1 << 26}, {1000}, {4096, 4096, 4096}, {32, 64, 112, 112, 64}} {
		got, err := ParseSizes([]string{SizeArg(s)})
		if err != nil || len(got) != 1 || got[0].String() != s.String() {
			t.Errorf("ParseSizes(SizeArg(%v) = %q) = %v, %v", s, SizeArg(s), got, err)
		}
	}
	for _, bad := range []string{"2^y", "1e9", "", "0", "-4"} {
		if _, err := ParseSizes([]string{bad}); err == nil {
			t.Errorf("ParseSizes(%q) accepted it", bad)
		}
	}
}

// TestAbout: results another step measured say plainly where they come
// from: this session's, replayed, or recorded while the session is live.
func TestAbout(t *testing.T) {
	recorded := []Result{{GPU: "G", Date: "2026-11-22", Mode: "replayed"}}
	live := []Result{{GPU: "G", Date: "2026-11-23", Mode: "live"}}
	tests := []struct {
		env  *Env
		rs   []Result
		want string
	}{
		{Replay(nil, View{}), recorded, "replayed from G, 2026-11-22"},
		{liveEnv(&fakeDev{}, View{}), live, "live on G, 2026-11-23"},
		{liveEnv(&fakeDev{}, View{}), recorded, "recorded on G, 2026-11-22, with the lesson: this session has not measured them yet"},
	}
	for _, tt := range tests {
		if got := tt.env.About(tt.rs); got != tt.want {
			t.Errorf("About = %q, want %q", got, tt.want)
		}
	}
}
