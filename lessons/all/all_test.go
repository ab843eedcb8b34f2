package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
