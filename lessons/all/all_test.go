package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cudarepl/lessons"
)

// TestEveryLessonImported fails when a lesson folder was added or removed
// without regenerating all.go.
func TestEveryLessonImported(t *testing.T) {
	src, err := os.ReadFile("all.go")
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob("../[0-9][0-9]-*/lesson.go")
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		if !strings.Contains(string(src), `"cudarepl/lessons/`+name+`"`) {
			t.Errorf("all.go does not import lesson %s: run go generate ./lessons/all", name)
		}
	}
	if got := strings.Count(string(src), `_ "cudarepl/lessons/`); got != len(dirs) {
		t.Errorf("all.go imports %d lessons, but there are %d folders: run go generate ./lessons/all", got, len(dirs))
	}
}

// TestFoldersNameTheirLessons: each lesson folder is named after the
// number and slug its Def registers (NN-slug), and the lesson registered
// under that name is the one whose prose is the folder's lesson.md; every
// registered lesson has its folder. The number and slug are written in
// the Def alone, so this is what keeps the folder's name true.
func TestFoldersNameTheirLessons(t *testing.T) {
	byFolder := map[string]*lessons.Lesson{}
	for _, l := range lessons.All() {
		byFolder[l.Folder()] = l
	}
	dirs, _ := filepath.Glob("../[0-9][0-9]-*/lesson.go")
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		l, ok := byFolder[name]
		if !ok {
			t.Errorf("folder %s: no lesson is registered with that number and slug; its Def's Number and Slug must name its folder", name)
			continue
		}
		delete(byFolder, name)
		md, err := os.ReadFile(filepath.Join(filepath.Dir(d), "lesson.md"))
		if err != nil {
			t.Error(err)
			continue
		}
		title, _, _ := strings.Cut(strings.TrimPrefix(string(md), "# "), "\n")
		if title != l.Title {
			t.Errorf("folder %s: the lesson registered as %s is %q, but the folder's lesson.md is %q", name, l.Folder(), l.Title, title)
		}
	}
	for name := range byFolder {
		t.Errorf("lesson %s is registered, but there is no folder lessons/%s", name, name)
	}
}
