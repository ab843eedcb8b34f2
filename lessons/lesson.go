package lessons

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
)

// Lesson is one lesson of the course: prose in steps, each step maybe with
// an action that runs code.
type Lesson struct {
	Number int    // its place in the course, from 1
	Slug   string // its name on the command line, e.g. "vector-add"
	Title  string // from the "# " heading of lesson.md
	Intro  string // the text before the first step: "In this lesson you will…"
	Steps  []Step

	Kernels  string    // its file in package kernels, e.g. "vector_add.cu"; "" if none
	Problem  *Problem  // what its kernels compute, for run, check and bench; nil if none
	Exercise *Exercise // nil if none
	Planted  []Planted // kernels its checks must pass or reject, from its testdata

	recorded ResultSet // results recorded on a reference GPU, what replay shows
	files    fs.FS     // the lesson's folder (Def.Files), holding the planted kernels
}

// Step is one "## " section of lesson.md and what it runs.
type Step struct {
	Title  string
	Prose  string // Markdown
	Action Action // nil for prose only
}

// ErrStopped is returned when the learner stops a long step (Ctrl-C).
var ErrStopped = errors.New("stopped")

// Def is what a lesson folder registers: its number and slug, its files,
// its actions keyed by the step heading they belong to, and what they run.
//
// The folder is named after the number and slug, NN-slug
// (lessons/02-vector-add for Number 2, Slug "vector-add"): a test in
// lessons/all holds the two to agree, and lessontest.Run finds the lesson
// of the folder it runs in by that name.
//
// Actions are given as pointers (&lessons.Sweep{…}); a step that reads
// the results of another finds it by that pointer: env.Latest(l,
// batchSizes) rather than by repeating the step's heading.
type Def struct {
	Number int    // its place in the course, from 1
	Slug   string // its name on the command line, e.g. "vector-add"
	// Files is the lesson's folder, embedded by one line of lesson.go
	// naming what it holds of these (the package documentation shows
	// it): lesson.md, the prose; exercise.cu, the exercise's starter
	// (named for the extension of Exercise.File: exercise.sched for a
	// .sched); results/*.json, what was recorded on a reference GPU,
	// which replay shows; testdata/, the planted kernels.
	Files    fs.FS
	Actions  map[string]Action // step heading → action
	Kernels  string
	Problem  *Problem
	Exercise *Exercise

	// Planted are kernels in testdata/ that the lesson's checks must pass
	// or reject, as a learner's would be judged; tests run every one.
	Planted []Planted
}

// Planted is a kernel file kept in a lesson's testdata: a solution its
// checks must pass, or a planted mistake they must reject.
type Planted struct {
	File string // in testdata, e.g. "no_guard.cu"
	Like string // the version it is judged like; the exercise's when ""
	// Want is what the verdict must say: "" for a pass, else part of the
	// reason it fails (e.g. "past the end of c", "timed out",
	// "does not compile").
	Want string
	// Sanitize, if set, names the compute-sanitizer tool the kernel is
	// judged under; Want is then part of what the sanitizer reports.
	Sanitize string
	// NeedsHeaders marks a kernel that includes a CUDA toolkit header: it
	// compiles only where the toolkit's headers are found.
	NeedsHeaders bool
}

// registry holds every lesson by slug.
var registry = map[string]*Lesson{}

// Register adds a lesson; lesson folders call it from init. It panics on a
// malformed definition, which is a programming error caught by any test.
func Register(d Def) {
	l, err := build(d)
	if err != nil {
		panic(err)
	}
	if _, dup := registry[l.Slug]; dup {
		panic(fmt.Sprintf("lessons: %s registered twice", l.Slug))
	}
	registry[l.Slug] = l
}

// build reads the lesson's files, parses the prose and attaches each
// action to its step.
func build(d Def) (*Lesson, error) {
	l := &Lesson{Number: d.Number, Slug: d.Slug, Kernels: d.Kernels, Problem: d.Problem, Exercise: d.Exercise,
		Planted: d.Planted, files: d.Files}
	if d.Files == nil {
		return nil, fmt.Errorf("lessons: %s: the Def has no Files (//go:embed lesson.md … in lesson.go)", d.Slug)
	}
	md, err := fs.ReadFile(d.Files, "lesson.md")
	if err != nil {
		return nil, fmt.Errorf("lessons: %s: %w", d.Slug, err)
	}
	l.Title, l.Intro, l.Steps, err = parseMarkdown(string(md))
	if err != nil {
		return nil, fmt.Errorf("lessons: %s: lesson.md: %w", d.Slug, err)
	}
	if x := d.Exercise; x != nil && x.Starter == "" {
		b, err := fs.ReadFile(d.Files, x.starterFile())
		if err != nil {
			return nil, fmt.Errorf("lessons: %s: the exercise's starter, %s, is not in the Def's Files: %w", d.Slug, x.starterFile(), err)
		}
		x.Starter = string(b) // the lesson keeps the Exercise the Def was given
	}
	used := map[string]bool{}
	for i := range l.Steps {
		if a, ok := d.Actions[l.Steps[i].Title]; ok {
			l.Steps[i].Action = a // the Def's pointer, by which Env.Latest finds the step
			used[l.Steps[i].Title] = true
		}
	}
	for title := range d.Actions {
		if !used[title] {
			return nil, fmt.Errorf("lessons: %s: an action is registered for step %q, which lesson.md does not have", d.Slug, title)
		}
	}
	for _, p := range l.Problems() {
		if p.Setup != nil && p.Memory == nil {
			return nil, fmt.Errorf("lessons: %s: problem %q does not say how much memory a size takes (Memory)", d.Slug, p.Name)
		}
	}
	for _, pk := range d.Planted {
		if _, err := fs.Stat(d.Files, "testdata/"+pk.File); err != nil {
			return nil, fmt.Errorf("lessons: %s: planted kernel %s is not in the embedded testdata: %w", d.Slug, pk.File, err)
		}
	}
	if l.recorded, err = loadRecorded(d.Files); err != nil {
		return nil, fmt.Errorf("lessons: %s: %w", d.Slug, err)
	}
	return l, nil
}

// parseMarkdown splits lesson.md into its title, intro and "## " steps.
// Headings inside fenced code blocks do not count.
func parseMarkdown(md string) (title, intro string, steps []Step, err error) {
	var cur *Step
	var body []string
	fenced := false
	flush := func() {
		text := strings.TrimSpace(strings.Join(body, "\n"))
		if cur == nil {
			intro = text
		} else {
			cur.Prose = text
			steps = append(steps, *cur)
		}
		body = nil
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		switch {
		case !fenced && strings.HasPrefix(line, "# ") && title == "":
			title = strings.TrimSpace(line[2:])
		case !fenced && strings.HasPrefix(line, "## "):
			flush()
			cur = &Step{Title: strings.TrimSpace(line[3:])}
		default:
			body = append(body, line)
		}
	}
	flush()
	switch {
	case title == "":
		return "", "", nil, fmt.Errorf("no \"# \" title")
	case len(steps) == 0:
		return "", "", nil, fmt.Errorf("no \"## \" steps")
	}
	for _, s := range steps {
		if s.Prose == "" {
			return "", "", nil, fmt.Errorf("step %q has no prose", s.Title)
		}
	}
	return title, intro, steps, nil
}

// All returns the registered lessons in course order.
func All() []*Lesson {
	out := make([]*Lesson, 0, len(registry))
	for _, l := range registry {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// Find returns the lesson named by slug, by number ("2"), or by a unique
// prefix of its slug.
func Find(name string) (*Lesson, error) {
	if l, ok := registry[name]; ok {
		return l, nil
	}
	var matches []*Lesson
	for _, l := range All() {
		if fmt.Sprint(l.Number) == strings.TrimLeft(name, "0") || strings.HasPrefix(l.Slug, name) {
			matches = append(matches, l)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	var names []string
	for _, l := range All() {
		names = append(names, l.Slug)
	}
	if len(matches) > 1 {
		return nil, fmt.Errorf("lessons: %q could be %s", name, slugs(matches))
	}
	return nil, fmt.Errorf("lessons: no lesson %q (there are: %s)", name, strings.Join(names, ", "))
}

func slugs(ls []*Lesson) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Slug)
	}
	return strings.Join(s, " or ")
}

// Problems returns every problem the lesson's steps run, the lesson's own
// first, each once.
func (l *Lesson) Problems() []*Problem {
	var out []*Problem
	add := func(p *Problem) {
		if p != nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	add(l.Problem)
	for _, s := range l.Steps {
		for _, p := range problemsOf(s.Action, l) {
			add(p)
		}
	}
	return out
}

// Folder is the name of the lesson's folder under lessons/, its number
// and slug: "02-vector-add". Its notebook and figures are named after it.
func (l *Lesson) Folder() string { return fmt.Sprintf("%02d-%s", l.Number, l.Slug) }

// Recorded returns the results recorded for the lesson on a reference GPU.
func (l *Lesson) Recorded() ResultSet { return l.recorded }

// PlantedCode returns the source of a planted kernel from the lesson's
// testdata.
func (l *Lesson) PlantedCode(pk Planted) (string, error) {
	b, err := fs.ReadFile(l.files, "testdata/"+pk.File)
	return string(b), err
}

// stepTitle returns the title of the step whose action is a: the very
// pointer the Def was given.
func (l *Lesson) stepTitle(a Action) (string, error) {
	for _, s := range l.Steps {
		if s.Action == a {
			return s.Title, nil
		}
	}
	return "", fmt.Errorf("lessons: %s: that %s action belongs to no step of the lesson", l.Slug, a.Kind())
}

// StepNamed returns the index of the step whose title is title.
func (l *Lesson) StepNamed(title string) (int, bool) {
	for i, s := range l.Steps {
		if s.Title == title {
			return i, true
		}
	}
	return 0, false
}
