package nccl

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"cudarepl/internal/dl"
)

// TestVersionString: NCCL_VERSION_CODE is major·10000 + minor·100 + patch
// from 2.9 on, major·1000 + minor·100 + patch before (nccl.h).
func TestVersionString(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{23007, "2.30.7"},
		{22809, "2.28.9"},
		{21805, "2.18.5"},
		{20900, "2.9.0"},
		{2708, "2.7.8"},
		{2804, "2.8.4"},
		{30000, "3.0.0"},
	}
	for _, tt := range tests {
		if got := versionString(tt.code); got != tt.want {
			t.Errorf("versionString(%d) = %q; want %q", tt.code, got, tt.want)
		}
	}
}

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestOpenMissing: where NCCL is not found the error says how to get it;
// on Windows and macOS it says NVIDIA makes none; $CUDAREPL_NCCL set is
// the one file tried, and the error says so.
func TestOpenMissing(t *testing.T) {
	t.Setenv(dl.HideEnv, "")
	absent := filepath.Join(t.TempDir(), "libnccl.so.2")
	tests := []struct {
		desc, goos string
		env        map[string]string
		want       string
	}{
		{"windows", "windows", nil, "gpu: NCCL not found (NVIDIA makes NCCL for Linux only, not for Windows)"},
		{"macOS", "darwin", nil, "gpu: NCCL not found (NVIDIA makes NCCL for Linux only, not for macOS)"},
		{"CUDAREPL_NCCL names no file", "linux", map[string]string{PathEnv: absent},
			"gpu: NCCL not found (" + absent + "); CUDAREPL_NCCL names it: point it at libnccl.so.2, or unset it"},
	}
	for _, tt := range tests {
		if tt.goos != runtime.GOOS && tt.goos == "linux" {
			continue // dl.Open tries Linux's file names on Linux alone
		}
		_, err := openNCCL(tt.goos, env(tt.env), t.TempDir())
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: openNCCL = %v; want %q", tt.desc, err, tt.want)
		}
		if !errors.Is(err, dl.ErrUnavailable) {
			t.Errorf("%s: %v is not dl.ErrUnavailable", tt.desc, err)
		}
	}
}

// TestOpenHint: with no NCCL on the loader's path the error names what it
// tried and how to install NCCL. It needs a Linux machine without NCCL.
func TestOpenHint(t *testing.T) {
	t.Setenv(dl.HideEnv, "")
	if runtime.GOOS != "linux" {
		t.Skip("NCCL's file names are Linux's")
	}
	_, err := openNCCL("linux", env(nil), t.TempDir())
	if err == nil {
		t.Skip("NCCL is installed here, so the error for a missing one cannot be seen")
	}
	want := "gpu: NCCL not found (libnccl.so.2, libnccl.so); " + hint
	if err == nil || err.Error() != want {
		t.Errorf("openNCCL = %v; want %q", err, want)
	}
}

// TestOpenHidden: CUDAREPL_HIDE=nccl hides an installed NCCL.
func TestOpenHidden(t *testing.T) {
	t.Setenv(dl.HideEnv, "nccl")
	_, err := openNCCL("linux", env(nil), t.TempDir())
	want := "gpu: NCCL hidden by CUDAREPL_HIDE=nccl (take nccl out of it to use NCCL where it is installed)"
	if err == nil || err.Error() != want {
		t.Errorf("openNCCL = %v; want %q", err, want)
	}
}

// TestPipLibraries: pip's wheels are found in $VIRTUAL_ENV first, then
// under /opt/*/.venv, then in the system's Python folders.
func TestPipLibraries(t *testing.T) {
	root, venv := t.TempDir(), t.TempDir()
	lib := "nvidia/nccl/lib/libnccl.so.2"
	files := []string{
		filepath.Join(venv, "lib/python3.12/site-packages", lib),
		filepath.Join(root, "opt/course/.venv/lib/python3.11/site-packages", lib),
		filepath.Join(root, "usr/local/lib/python3.13/dist-packages", lib),
		filepath.Join(root, "usr/lib/python3/dist-packages", lib),
	}
	for _, f := range append(files, filepath.Join(root, "opt/other/venv/lib/python3.12/site-packages", lib)) {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := pipLibraries(env(map[string]string{"VIRTUAL_ENV": venv}), root)
	if !slices.Equal(got, files) {
		t.Errorf("pipLibraries = %q; want %q", got, files)
	}
}
