package all

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cudarepl/lessons"
)

// TestEveryLessonIsComplete: prose for every step, at least one check and
// one figure, and the lessons numbered 1, 2, 3… in order.
func TestEveryLessonIsComplete(t *testing.T) {
	all := lessons.All()
	if len(all) < 2 {
		t.Fatalf("%d lessons registered", len(all))
	}
	for i, l := range all {
		if i > 0 && l.Number <= all[i-1].Number {
			t.Errorf("lesson %s is number %d, after %s, number %d", l.Slug, l.Number, all[i-1].Slug, all[i-1].Number)
		}
		if !strings.HasPrefix(l.Intro, "In this lesson you will") {
			t.Errorf("%s: the intro does not open with \"In this lesson you will\": %q", l.Slug, l.Intro)
		}
		kinds := map[string]int{}
		for _, s := range l.Steps {
			if strings.TrimSpace(s.Prose) == "" {
				t.Errorf("%s: step %q has no prose", l.Slug, s.Title)
			}
			if s.Action != nil {
				kinds[s.Action.Kind()]++
			}
		}
		if kinds["check"] == 0 {
			t.Errorf("%s has no check step", l.Slug)
		}
		if kinds["sweep"] == 0 {
			t.Errorf("%s has no sweep, so no figure", l.Slug)
		}
	}
}

// TestEveryLessonTestsItself: each lesson folder has its own test, which
// runs the shared lesson tests (replay, planted kernels) through lessontest.
func TestEveryLessonTestsItself(t *testing.T) {
	dirs, _ := filepath.Glob("../[0-9][0-9]-*/lesson.go")
	for _, d := range dirs {
		dir := filepath.Dir(d)
		b, err := os.ReadFile(filepath.Join(dir, "lesson_test.go"))
		if err != nil {
			t.Errorf("%s has no lesson_test.go of its own", dir)
			continue
		}
		if !strings.Contains(string(b), "lessontest.Run(t)") {
			t.Errorf("%s/lesson_test.go does not call lessontest.Run", dir)
		}
	}
}

// TestREADMELinks: every file of the repository the README points at
// exists (it once sent readers to a curriculum that was not there).
func TestREADMELinks(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\b(?:docs|lessons|notebooks|scripts)/[\w./*-]+\.(?:md|json|ipynb|sh)\b`).FindAllString(string(b), -1) {
		if matches, _ := filepath.Glob(filepath.Join("../..", m)); len(matches) == 0 {
			t.Errorf("README names %s, which is not there", m)
		}
	}
}
