package dl

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// LoadedLibrary returns the path of the shared library this process has
// loaded whose file name starts with prefix (from /proc/self/maps), or "".
func LoadedLibrary(prefix string) string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		path := fields[len(fields)-1]
		if strings.HasPrefix(filepath.Base(path), prefix) {
			return path
		}
	}
	return ""
}
