//go:build !linux

package dl

import (
	"path/filepath"
	"runtime"
)

// LoadedLibrary returns the path of a library Open has opened whose file
// name starts with prefix, or "". On Windows, whose DLLs carry no "lib",
// prefix "libnvrtc" finds nvrtc64_120_0.dll, and case does not matter.
func LoadedLibrary(prefix string) string {
	opened.Lock()
	defer opened.Unlock()
	for _, l := range opened.libs {
		if matchesLibrary(runtime.GOOS, filepath.Base(l.path), prefix) {
			return l.path
		}
	}
	return ""
}
