package kernels

import (
	"embed"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cudarepl/nvrtc"
)

//go:embed *.cu
var files embed.FS

// Header is the include name of the course header: the device helpers that
// several kernel files use (fp16 conversions, smem32, mma16816, Hopper's
// mbarriers and TMA loads), each written once.
const Header = "cudarepl.cuh"

//go:embed cudarepl.cuh
var header string

// Headers returns the headers a kernel may #include by name with no CUDA
// toolkit installed, include name → text, for a nvrtc.Source's Headers: the
// course header. Source gives them to every course file; a learner's own
// file gets them the same way.
func Headers() map[string]string { return map[string]string{Header: header} }

// Files lists the embedded .cu files, sorted.
func Files() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Source returns the embedded file as a nvrtc.Source named kernels/<file>,
// with the course header among its Headers.
func Source(file string) (nvrtc.Source, error) {
	b, err := files.ReadFile(file)
	if err != nil {
		return nvrtc.Source{}, fmt.Errorf("kernels: no file %q (have %s)", file, strings.Join(Files(), ", "))
	}
	return nvrtc.Source{Name: "kernels/" + file, Code: string(b), Headers: Headers()}, nil
}

// Version is one rung of a file's ladder.
type Version struct {
	N       int    // the version number, 1 for the simplest
	Name    string // the kernel's function name, e.g. "vadd_v2"
	Summary string // what changed and why it is faster, from the // vN: line
	Line    int    // line of the kernel's declaration, 1-based
}

// kernelAttrs are the launch bounds and cluster dimensions a kernel's
// declaration may carry before or after its void, written with or without
// a space before their "(".
const kernelAttrs = `(?:(?:__launch_bounds__|__cluster_dims__|CLUSTER_DIMS)\s*\([^)]*\)\s+)*`

var (
	versionLine = regexp.MustCompile(`^//\s*v(\d+):\s*(.+)$`)
	// kernelDecl is a __global__ kernel's declaration up to the "(" of its
	// parameters; the name is group 1. Ladder, Function, Names and
	// Signatures all find kernels with it.
	kernelDecl = regexp.MustCompile(`__global__\s+` + kernelAttrs + `void\s+` + kernelAttrs + `(\w+)\s*\(`)
)

// Ladder returns the versions declared in src, in file order. A "// vN:"
// comment may run over several lines; the kernel declared after it is the
// version. Versions must be numbered 1, 2, 3… in order.
func Ladder(src nvrtc.Source) ([]Version, error) {
	lines := strings.Split(src.Code, "\n")
	var out []Version
	for i := 0; i < len(lines); i++ {
		m := versionLine.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		summary := m[2]
		j := i + 1
		for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "//"); j++ {
			summary += " " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[j]), "//"))
		}
		if j >= len(lines) {
			return nil, fmt.Errorf("kernels: %s:%d: v%d names no kernel after it", src.Name, i+1, n)
		}
		d := kernelDecl.FindStringSubmatch(lines[j])
		if d == nil {
			return nil, fmt.Errorf("kernels: %s:%d: v%d is not followed by a __global__ kernel", src.Name, i+1, n)
		}
		if want := len(out) + 1; n != want {
			return nil, fmt.Errorf("kernels: %s:%d: found v%d where v%d was due", src.Name, i+1, n, want)
		}
		out = append(out, Version{N: n, Name: d[1], Summary: summary, Line: j + 1})
		i = j
	}
	return out, nil
}

// Function returns the source of the kernel name in src, or of the
// __device__ function of that name, from src's code or else from one of its
// headers (a helper of the course header): the comment block (and template
// line) right above it and its body up to the matching closing brace.
func Function(src nvrtc.Source, name string) (string, error) {
	file, lines := src.Name, strings.Split(src.Code, "\n")
	at := declaration(lines, name)
	for _, h := range slices.Sorted(maps.Keys(src.Headers)) {
		if at >= 0 {
			break
		}
		file, lines = h, strings.Split(src.Headers[h], "\n")
		at = declaration(lines, name)
	}
	if at < 0 {
		return "", fmt.Errorf("kernels: %s has no kernel %q", src.Name, name)
	}
	start := at
	for start > 0 {
		prev := strings.TrimSpace(lines[start-1])
		if !strings.HasPrefix(prev, "//") && !strings.HasPrefix(prev, "template") {
			break
		}
		start--
	}
	depth, seen := 0, false
	for j := at; j < len(lines); j++ {
		depth += strings.Count(lines[j], "{") - strings.Count(lines[j], "}")
		seen = seen || strings.Contains(lines[j], "{")
		if seen && depth == 0 {
			return strings.Join(lines[start:j+1], "\n"), nil
		}
	}
	return "", fmt.Errorf("kernels: %s: %s has no closing brace", file, name)
}

// declaration returns the index of the line that declares the kernel name,
// or else the __device__ function name; -1 when none does.
func declaration(lines []string, name string) int {
	for i, l := range lines {
		if d := kernelDecl.FindStringSubmatch(l); d != nil && d[1] == name {
			return i
		}
	}
	device := regexp.MustCompile(`__device__[^;{(]*\b` + regexp.QuoteMeta(name) + `\s*\(`)
	for i, l := range lines {
		if device.MatchString(l) {
			return i
		}
	}
	return -1
}

// Summary is the comment above kernel name in src, joined into one line:
// what a kernel outside the file's ladder of "// vN:" lines does.
func Summary(src nvrtc.Source, name string) (string, error) {
	fn, err := Function(src, name)
	if err != nil {
		return "", err
	}
	var words []string
	for _, line := range strings.Split(fn, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "//") {
			break
		}
		words = append(words, strings.TrimSpace(strings.TrimPrefix(line, "//")))
	}
	return strings.Join(words, " "), nil
}

// Names returns every __global__ kernel declared in src, in file order.
func Names(src nvrtc.Source) []string {
	var out []string
	for _, m := range kernelDecl.FindAllStringSubmatch(src.Code, -1) {
		out = append(out, m[1])
	}
	return out
}
