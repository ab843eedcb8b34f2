package layers

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "cudarepl/"

// floors are the packages of the module by floor, lowest first; a folder
// pattern ending in "/*" stands for every package under it. A package may
// import only packages of lower floors.
var floors = [][]string{
	{"internal/dl", "internal/term", "internal/sysproc", "internal/syncbuf", "numeric", "plots", "fuse", "scripts/testsum", "internal/layers", "notebooks"},
	{"nvrtc", "nvml", "gpu/share"},
	{"gpu", "kernels"},
	{"blas", "nccl", "cudnnx", "gpu/profiler", "gpu/remote", "gpu/sanitizer", "internal/gputest"},
	{"worker", "lessons"},
	{"lessons/attn", "lessons/conv", "lessons/fusecmd", "lessons/lessontest"},
	{"lessons/[0-9][0-9]-*"},
	{"lessons/all"},
	{"notebook"},
	{"cmd/cudarepl"},
}

// only narrows what some packages may import, beyond their floor.
var only = map[string][]string{
	// The lessons framework knows the runtime (its transport and sharing
	// too), the kernels, the plots and the CPU numerics: no library, no
	// lesson's shared code.
	"lessons": {"gpu", "gpu/profiler", "gpu/remote", "gpu/sanitizer", "gpu/share", "nvrtc", "kernels", "plots", "numeric"},
	// The entry points reach the GPU through the lessons (DESIGN.md).
	"cmd/cudarepl": {"lessons", "lessons/all", "lessons/fusecmd", "notebook", "worker", "nvrtc", "plots", "internal/dl", "internal/term"},
	"notebook":     {"lessons", "lessons/all", "lessons/fusecmd", "worker", "plots", "fuse"},
}

// floorOf is the floor of package dir, or -1.
func floorOf(dir string) int {
	for i, f := range floors {
		for _, p := range f {
			if ok, _ := filepath.Match(p, dir); ok {
				return i
			}
		}
	}
	return -1
}

// imports lists the module's packages that dir's non-test files import.
func imports(t *testing.T, root, dir string) []string {
	files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out, rest) {
				out = append(out, rest)
			}
		}
	}
	return out
}

func TestFloors(t *testing.T) {
	root := filepath.Join("..", "..")
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "build") {
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(p, "*.go")); len(gos) > 0 {
			rel, _ := filepath.Rel(root, p)
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(dirs) < 20 {
		t.Fatalf("found only %d packages under %s: %v", len(dirs), root, dirs)
	}
	for _, dir := range dirs {
		f := floorOf(dir)
		if f < 0 {
			t.Errorf("package %s stands on no floor: give it one in floors (and in docs/architecture.md)", dir)
			continue
		}
		for _, im := range imports(t, root, dir) {
			switch g := floorOf(im); {
			case g < 0:
				t.Errorf("%s imports %s, which stands on no floor", dir, im)
			case g >= f:
				t.Errorf("%s (floor %d) imports %s (floor %d): a package imports only lower floors", dir, f, im, g)
			}
			if allowed, ok := only[dir]; ok && !slices.Contains(allowed, im) {
				t.Errorf("%s imports %s; it may import only %s", dir, im, strings.Join(allowed, ", "))
			}
		}
	}
}
