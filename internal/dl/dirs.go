package dl

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The folders Open and Tool search on Windows after the loader's own. They
// are built here, on every system, so that tests on Linux check them; only
// Windows uses them (load_windows.go).

// windowsToolkitRoots lists the CUDA toolkits of a Windows machine:
// $CUDA_PATH, $CUDA_HOME, then those installed under Program Files
// (...\NVIDIA GPU Computing Toolkit\CUDA\v12.8), newest first.
func windowsToolkitRoots(getenv func(string) string) []string {
	var roots []string
	for _, env := range []string{"CUDA_PATH", "CUDA_HOME"} {
		if d := getenv(env); d != "" {
			roots = append(roots, d)
		}
	}
	if pf := getenv("ProgramFiles"); pf != "" {
		roots = append(roots, newestFirst(globDirs(filepath.Join(pf, "NVIDIA GPU Computing Toolkit", "CUDA", "v*")), 0)...)
	}
	return uniqueDirs(roots)
}

// windowsToolkitBins lists the folders that hold the toolkits' DLLs and
// programs: bin\x64 (CUDA 13 on) and bin (CUDA 12 and before) of each.
func windowsToolkitBins(getenv func(string) string) []string {
	var dirs []string
	for _, r := range windowsToolkitRoots(getenv) {
		dirs = append(dirs, filepath.Join(r, "bin", "x64"), filepath.Join(r, "bin"))
	}
	return dirs
}

// windowsLibDirs lists the folders Open searches on Windows after the
// loader's own: the toolkits' (windowsToolkitBins); cuDNN 9's, which its
// installer puts under Program Files as NVIDIA\CUDNN\v9.x\bin\<CUDA
// version>, those of the first toolkit's CUDA major version first, so that
// cuDNN runs on the CUDA that cuBLAS and NVRTC come from; and NVSMI, where
// drivers before 2021 put nvml.dll (later ones put it in System32).
func windowsLibDirs(getenv func(string) string) []string {
	dirs := windowsToolkitBins(getenv)
	major := 0
	if roots := windowsToolkitRoots(getenv); len(roots) > 0 {
		if v := versionOf(filepath.Base(roots[0])); len(v) > 0 {
			major = v[0]
		}
	}
	if pf := getenv("ProgramFiles"); pf != "" {
		for _, c := range newestFirst(globDirs(filepath.Join(pf, "NVIDIA", "CUDNN", "v9*")), 0) {
			dirs = append(dirs, newestFirst(globDirs(filepath.Join(c, "bin", "*")), major)...)
			dirs = append(dirs, filepath.Join(c, "bin"))
		}
		dirs = append(dirs, filepath.Join(pf, "NVIDIA Corporation", "NVSMI"))
	}
	return uniqueDirs(dirs)
}

// globDirs returns the folders that pattern matches.
func globDirs(pattern string) []string {
	matches, _ := filepath.Glob(pattern)
	return slices.DeleteFunc(matches, func(m string) bool { return !isDir(m) })
}

// newestFirst sorts folders named by versions ("v12.8", "13.0", "v9.10")
// newest first, those of major version prefer (unless 0) before the rest,
// and those named by no version last.
func newestFirst(dirs []string, prefer int) []string {
	slices.SortStableFunc(dirs, func(a, b string) int {
		va, vb := versionOf(filepath.Base(a)), versionOf(filepath.Base(b))
		pa, pb := prefer != 0 && len(va) > 0 && va[0] == prefer, prefer != 0 && len(vb) > 0 && vb[0] == prefer
		switch {
		case pa != pb:
			if pa {
				return -1
			}
			return 1
		case len(va) == 0 || len(vb) == 0:
			return cmp.Compare(len(vb), len(va))
		}
		return slices.Compare(vb, va)
	})
	return dirs
}

// versionOf reads "v12.8" or "12.8" as [12 8]; nil where name is not a
// version.
func versionOf(name string) []int {
	var v []int
	for _, f := range strings.Split(strings.TrimPrefix(strings.ToLower(name), "v"), ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil
		}
		v = append(v, n)
	}
	return v
}

// uniqueDirs drops the folders named before, whatever their case (folder
// names are not case-sensitive on Windows).
func uniqueDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(filepath.Clean(o), filepath.Clean(d)) }) {
			out = append(out, d)
		}
	}
	return out
}

// matchesLibrary reports whether the library file name base starts with
// prefix ("libnvrtc"), as goos names its libraries: on Windows without
// case, and without the "lib" that Windows DLLs do not carry
// ("nvrtc64_120_0.dll").
func matchesLibrary(goos, base, prefix string) bool {
	if goos != "windows" {
		return strings.HasPrefix(base, prefix)
	}
	base, prefix = strings.ToLower(base), strings.ToLower(prefix)
	return strings.HasPrefix(base, prefix) || strings.HasPrefix(base, strings.TrimPrefix(prefix, "lib"))
}

// isDir reports whether p is a folder.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
