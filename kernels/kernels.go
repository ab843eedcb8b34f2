package kernels

import (
	"embed"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cudarepl/gpu"
)

//go:embed *.cu
var files embed.FS

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

// Source returns the embedded file as a gpu.Source named kernels/<file>.
func Source(file string) (gpu.Source, error) {
	b, err := files.ReadFile(file)
	if err != nil {
		return gpu.Source{}, fmt.Errorf("kernels: no file %q (have %s)", file, strings.Join(Files(), ", "))
	}
	return gpu.Source{Name: "kernels/" + file, Code: string(b)}, nil
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
func Ladder(src gpu.Source) ([]Version, error) {
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
// __device__ function of that name: the comment block (and template line)
// right above it and its body up to the matching closing brace.
func Function(src gpu.Source, name string) (string, error) {
	lines := strings.Split(src.Code, "\n")
	device := regexp.MustCompile(`__device__[^;{(]*\b` + regexp.QuoteMeta(name) + `\s*\(`)
	at := -1
	for i, l := range lines {
		if d := kernelDecl.FindStringSubmatch(l); d != nil && d[1] == name {
			at = i
			break
		}
	}
	if at < 0 {
		for i, l := range lines {
			if device.MatchString(l) {
				at = i
				break
			}
		}
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
	return "", fmt.Errorf("kernels: %s: %s has no closing brace", src.Name, name)
}

// Names returns every __global__ kernel declared in src, in file order.
func Names(src gpu.Source) []string {
	var out []string
	for _, m := range kernelDecl.FindAllStringSubmatch(src.Code, -1) {
		out = append(out, m[1])
	}
	return out
}
