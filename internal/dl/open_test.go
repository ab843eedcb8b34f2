package dl

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestNamesFor: each system tries its own form of name, and a name of no
// known form everywhere.
func TestNamesFor(t *testing.T) {
	names := []string{"libcuda.so.1", "nvcuda.dll", "libnvrtc.so", "nvrtc64_120_0.DLL", "libcudnn.9.dylib", "cudarepl-plain"}
	tests := []struct {
		goos string
		want []string
	}{
		{"linux", []string{"libcuda.so.1", "libnvrtc.so", "cudarepl-plain"}},
		{"freebsd", []string{"libcuda.so.1", "libnvrtc.so", "cudarepl-plain"}},
		{"windows", []string{"nvcuda.dll", "nvrtc64_120_0.DLL", "cudarepl-plain"}},
		{"darwin", []string{"libcudnn.9.dylib", "cudarepl-plain"}},
	}
	for _, tt := range tests {
		if got := namesFor(tt.goos, names); !slices.Equal(got, tt.want) {
			t.Errorf("namesFor(%q) = %q; want %q", tt.goos, got, tt.want)
		}
	}
}

// TestOpenMissing: a library that is nowhere is one sentence naming this
// system's file names only, then the hint; where the caller gave none of
// this system's, the sentence says why there is none, and no hint.
func TestOpenMissing(t *testing.T) {
	t.Setenv(HideEnv, "")
	absent := map[string]string{"so": "libcudarepl-absent.so.1", "dll": "cudarepl-absent.dll", "dylib": "libcudarepl-absent.dylib"}
	mine := absent[libraryForm(runtime.GOOS)]
	var others []string
	for form, n := range absent {
		if form != libraryForm(runtime.GOOS) {
			others = append(others, n)
		}
	}
	tests := []struct {
		names []string
		want  string
	}{
		{append([]string{mine}, others...), "gpu: NVML not found (" + mine + "); it comes with the NVIDIA driver"},
		{others, "gpu: NVML not found (" + noNamesReason(runtime.GOOS) + ")"},
	}
	for _, tt := range tests {
		_, err := Open("nvml", "NVML not found", "it comes with the NVIDIA driver", tt.names...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Open(%q) = %v; want %q", tt.names, err, tt.want)
		}
	}
}

// TestNoNamesReason: on a Mac the reason is that CUDA does not run there.
func TestNoNamesReason(t *testing.T) {
	for goos, want := range map[string]string{
		"darwin":  "CUDA does not run on macOS",
		"windows": "cudarepl knows no file name of it for windows",
	} {
		if got := noNamesReason(goos); got != want {
			t.Errorf("noNamesReason(%q) = %q; want %q", goos, got, want)
		}
	}
}

// TestOpenBindCall: the system's C library opens, a function bound from it
// answers, a missing symbol is an error unless optional, and LoadedLibrary
// finds the library.
func TestOpenBindCall(t *testing.T) {
	sys := map[string]struct{ lib, pid, prefix string }{
		"linux":   {"libc.so.6", "getpid", "libc"},
		"darwin":  {"/usr/lib/libSystem.B.dylib", "getpid", ""},
		"windows": {"kernel32.dll", "GetCurrentProcessId", "kernel32"},
	}
	s, ok := sys[runtime.GOOS]
	if !ok {
		t.Skipf("no C library named for %s", runtime.GOOS)
	}
	t.Setenv(HideEnv, "")
	lib, err := Open("driver", "C library not found", "", s.lib)
	if err != nil {
		t.Fatal(err)
	}
	if lib.Name != filepath.Base(s.lib) {
		t.Errorf("Name = %q; want %q", lib.Name, filepath.Base(s.lib))
	}
	var pid, absent func() int32
	if err := lib.Bind(map[string]any{s.pid: &pid, "cudarepl_absent": &absent}, "cudarepl_absent"); err != nil {
		t.Fatal(err)
	}
	if got := int(pid()); got != os.Getpid() {
		t.Errorf("%s() = %d; want %d", s.pid, got, os.Getpid())
	}
	if absent != nil {
		t.Errorf("an optional missing symbol was bound")
	}
	want := lib.Name + " has no symbol cudarepl_absent; it is too old"
	if err := lib.Bind(map[string]any{"cudarepl_absent": &absent}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Bind of a missing symbol = %v; want %q", err, want)
	}
	if s.prefix != "" {
		if got := LoadedLibrary(s.prefix); !matchesLibrary(runtime.GOOS, filepath.Base(got), s.prefix) {
			t.Errorf("LoadedLibrary(%q) = %q", s.prefix, got)
		}
	}
}

// TestMatchesLibrary: on Windows a prefix "libnvrtc" finds the DLL, which
// has no "lib", whatever the case; elsewhere the prefix is the name's.
func TestMatchesLibrary(t *testing.T) {
	tests := []struct {
		goos, base, prefix string
		want               bool
	}{
		{"linux", "libnvrtc.so.12", "libnvrtc", true},
		{"linux", "nvrtc.so", "libnvrtc", false},
		{"linux", "LIBNVRTC.so", "libnvrtc", false},
		{"windows", "nvrtc64_120_0.dll", "libnvrtc", true},
		{"windows", "NVRTC64_130_0.DLL", "libnvrtc", true},
		{"windows", "nvrtc-builtins64_120.dll", "libnvrtc", true},
		{"windows", "cublas64_12.dll", "libnvrtc", false},
	}
	for _, tt := range tests {
		if got := matchesLibrary(tt.goos, tt.base, tt.prefix); got != tt.want {
			t.Errorf("matchesLibrary(%q, %q, %q) = %v; want %v", tt.goos, tt.base, tt.prefix, got, tt.want)
		}
	}
}

// TestWindowsLibDirs: the folders searched on Windows, in a Program Files
// laid out as NVIDIA's installers lay it out: $CUDA_PATH's toolkit first,
// then the others newest first (bin\x64 before bin), cuDNN's folder for
// the first toolkit's CUDA before its others, then NVSMI.
func TestWindowsLibDirs(t *testing.T) {
	pf := t.TempDir()
	cuda := filepath.Join(pf, "NVIDIA GPU Computing Toolkit", "CUDA")
	cudnn := filepath.Join(pf, "NVIDIA", "CUDNN", "v9.7")
	for _, d := range []string{
		filepath.Join(cuda, "v12.8"), filepath.Join(cuda, "v13.0"), filepath.Join(cuda, "v12.10"), filepath.Join(cuda, "vlatest"),
		filepath.Join(cudnn, "bin", "12.8"), filepath.Join(cudnn, "bin", "13.0"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bins := func(root string) []string {
		return []string{filepath.Join(root, "bin", "x64"), filepath.Join(root, "bin")}
	}
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"CUDA_PATH set", map[string]string{"ProgramFiles": pf, "CUDA_PATH": filepath.Join(cuda, "v12.8")}, slices.Concat(
			bins(filepath.Join(cuda, "v12.8")), bins(filepath.Join(cuda, "v13.0")), bins(filepath.Join(cuda, "v12.10")), bins(filepath.Join(cuda, "vlatest")),
			[]string{filepath.Join(cudnn, "bin", "12.8"), filepath.Join(cudnn, "bin", "13.0"), filepath.Join(cudnn, "bin"),
				filepath.Join(pf, "NVIDIA Corporation", "NVSMI")})},
		{"no CUDA_PATH", map[string]string{"ProgramFiles": pf}, slices.Concat(
			bins(filepath.Join(cuda, "v13.0")), bins(filepath.Join(cuda, "v12.10")), bins(filepath.Join(cuda, "v12.8")), bins(filepath.Join(cuda, "vlatest")),
			[]string{filepath.Join(cudnn, "bin", "13.0"), filepath.Join(cudnn, "bin", "12.8"), filepath.Join(cudnn, "bin"),
				filepath.Join(pf, "NVIDIA Corporation", "NVSMI")})},
		{"nothing installed", map[string]string{"CUDA_HOME": `C:\cuda`}, bins(`C:\cuda`)},
	}
	for _, tt := range tests {
		if got := windowsLibDirs(func(k string) string { return tt.env[k] }); !slices.Equal(got, tt.want) {
			t.Errorf("%s: windowsLibDirs =\n  %s\nwant\n  %s", tt.name, strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
		}
	}
}
