//go:build !windows

package dl

import "github.com/ebitengine/purego"

// exeSuffix ends the file names of programs here: none.
const exeSuffix = ""

// openLibrary dlopens path (a bare name: the loader's search path), its
// symbols resolved at once and visible to the libraries opened after it.
func openLibrary(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// lookup returns the address of the symbol name in library h.
func lookup(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// modulePath is where library h was loaded from: the path as opened. On
// Linux LoadedLibrary reads /proc/self/maps instead, which knows the
// folder of a bare name too.
func modulePath(h uintptr, opened string) string { return opened }

// libDirs lists the folders searched after the loader's own path, for
// toolkits installed where ld.so.cache does not look. macOS has none:
// Open tries no library there (CUDA does not run on macOS).
func libDirs() []string {
	return append(ToolkitDirs("lib64", "lib"),
		"/usr/local/cuda/lib64",
		"/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/cuda/targets/sbsa-linux/lib",
		"/usr/lib/x86_64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu",
		"/usr/lib64",
		"/usr/local/nvidia/lib64",
	)
}

// toolDirs lists the folders Tool searches after PATH.
func toolDirs() []string { return append(ToolkitDirs("bin"), "/usr/local/cuda/bin") }
