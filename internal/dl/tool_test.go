package dl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTool: a program is found in $CUDA_PATH/bin, then in the folders
// given, and not where it is not.
func TestTool(t *testing.T) {
	toolkit, extra := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(toolkit, "bin", "cudarepl-fake-a"), filepath.Join(extra, "cudarepl-fake-b")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CUDA_PATH", toolkit)
	t.Setenv("CUDA_HOME", "")
	for _, c := range []struct {
		name string
		want string
		ok   bool
	}{
		{"cudarepl-fake-a", filepath.Join(toolkit, "bin", "cudarepl-fake-a"), true},
		{"cudarepl-fake-b", filepath.Join(extra, "cudarepl-fake-b"), true},
		{"cudarepl-fake-c", "", false},
	} {
		if got, ok := Tool(c.name, extra); got != c.want || ok != c.ok {
			t.Errorf("Tool(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
