package dl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Library is a shared library opened with dlopen (LoadLibrary on Windows).
type Library struct {
	Name   string // the file name that opened, e.g. "libnvrtc.so.13", "nvrtc64_120_0.dll"
	path   string // where it was loaded from, as the loader says where it can
	handle uintptr
}

// ToolkitDirs lists the folders subs (such as "bin") of the toolkits that
// $CUDA_PATH and $CUDA_HOME name, in that order; none where neither is set.
func ToolkitDirs(subs ...string) []string {
	var dirs []string
	for _, env := range []string{"CUDA_PATH", "CUDA_HOME"} {
		if d := os.Getenv(env); d != "" {
			for _, sub := range subs {
				dirs = append(dirs, filepath.Join(d, sub))
			}
		}
	}
	return dirs
}

// Tool returns the path of the CUDA toolkit's program name
// (compute-sanitizer, ncu): on PATH, in the toolkit's bin folder ($CUDA_PATH,
// $CUDA_HOME, then /usr/local/cuda on Linux, the toolkits under Program
// Files on Windows, where name.exe is looked for too), or in one of more,
// tried last in their order. ok is false where none holds it.
func Tool(name string, more ...string) (path string, ok bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, d := range append(toolDirs(), more...) {
		for _, n := range []string{name, name + exeSuffix} {
			p := filepath.Join(d, n)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, true
			}
		}
	}
	return "", false
}

// HideEnv names the variable that makes cudarepl treat things that are
// installed as if they were not: a comma-separated list of HideKeys. It
// shows what a machine without them gets (replay mode, kernels not
// compiled), and lets a test run as it would on such a machine.
const HideEnv = "CUDAREPL_HIDE"

// HideKeys are the names $CUDAREPL_HIDE knows: the key each library is
// opened with (Open), and the programs cudarepl and its tests run.
var HideKeys = []string{"driver", "nvrtc", "cublas", "cudnn", "nccl", "nvml", "sanitizer", "ncu", "jupyter"}

// CheckHidden returns an error naming what $CUDAREPL_HIDE holds that is
// none of HideKeys, which would otherwise hide nothing, silently: a
// misspelt "nvrct" leaves NVRTC in use.
func CheckHidden() error {
	var unknown []string
	for _, h := range strings.Split(os.Getenv(HideEnv), ",") {
		if h = strings.TrimSpace(h); h != "" && !slices.ContainsFunc(HideKeys, func(k string) bool { return strings.EqualFold(k, h) }) {
			unknown = append(unknown, strconv.Quote(h))
		}
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s=%s: %s is none of %s, so it hides nothing", HideEnv, os.Getenv(HideEnv), unknown[0], strings.Join(HideKeys, ", "))
	}
	return fmt.Errorf("%s=%s: %s are none of %s, so they hide nothing", HideEnv, os.Getenv(HideEnv), strings.Join(unknown, ", "), strings.Join(HideKeys, ", "))
}

// Hidden reports whether $CUDAREPL_HIDE names what, e.g. "nvrtc".
func Hidden(what string) bool {
	for _, h := range strings.Split(os.Getenv(HideEnv), ",") {
		if strings.EqualFold(strings.TrimSpace(h), what) {
			return true
		}
	}
	return false
}

// Open opens the first of names that loads, trying each bare name (the
// loader's search path) and then each name in the toolkit's usual folders.
//
// names may hold the library's file names for every system: Open tries
// only this system's, by their form ("libcuda.so.1" on Linux,
// "nvcuda.dll" on Windows, "*.dylib" on macOS; a name of none of these
// forms everywhere), so a caller lists them all in one call.
//
// Failing, it returns an *UnavailableError that says "<what> (<names>)",
// then "; <hint>" if there is one; where no name is this system's, the
// parentheses say why instead ("CUDA does not run on macOS"), and there
// is no hint. key is the name $CUDAREPL_HIDE knows the library by; hidden
// by it, the error says so, and what would unhide it, not how to install
// what may well be installed.
func Open(key, what, hint string, names ...string) (*Library, error) {
	if Hidden(key) {
		return nil, &UnavailableError{Reason: fmt.Sprintf("%s hidden by %s=%s (take %s out of it to use %s where it is installed)",
			subject(what), HideEnv, os.Getenv(HideEnv), key, subject(what))}
	}
	names = namesFor(runtime.GOOS, names)
	if len(names) == 0 {
		return nil, &UnavailableError{Reason: fmt.Sprintf("%s (%s)", what, noNamesReason(runtime.GOOS))}
	}
	var firstErr error
	attempt := func(path string) *Library {
		h, err := openLibrary(path)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return nil
		}
		l := &Library{Name: filepath.Base(path), path: modulePath(h, path), handle: h}
		opened.Lock()
		opened.libs = append(opened.libs, l)
		opened.Unlock()
		return l
	}
	for _, n := range names {
		if l := attempt(n); l != nil {
			return l, nil
		}
	}
	for _, d := range libDirs() {
		for _, n := range names {
			p := filepath.Join(d, n)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if l := attempt(p); l != nil {
				return l, nil
			}
		}
	}
	reason := fmt.Sprintf("%s (%s)", what, strings.Join(names, ", "))
	if hint != "" {
		reason += "; " + hint
	}
	return nil, &UnavailableError{Reason: reason, Err: firstErr}
}

// opened holds every library Open opened, for LoadedLibrary where the
// system has no /proc/self/maps to read.
var opened struct {
	sync.Mutex
	libs []*Library
}

// namesFor returns those of names that are file names of libraries on
// goos, in their order: "*.dll" on Windows, "*.dylib" on macOS, "*.so"
// and "*.so.N" on the other systems, and a name of none of these forms
// on every system.
func namesFor(goos string, names []string) []string {
	var mine []string
	for _, n := range names {
		if sys := libraryFormOf(n); sys == "" || sys == libraryForm(goos) {
			mine = append(mine, n)
		}
	}
	return mine
}

// libraryForm names the form of goos's shared libraries: "dll", "dylib"
// or "so".
func libraryForm(goos string) string {
	switch goos {
	case "windows":
		return "dll"
	case "darwin", "ios":
		return "dylib"
	}
	return "so"
}

// libraryFormOf returns the form of the library file name n ("dll",
// "dylib", "so"), or "" where it is of none.
func libraryFormOf(n string) string {
	n = strings.ToLower(filepath.Base(n))
	switch {
	case strings.HasSuffix(n, ".dll"):
		return "dll"
	case strings.HasSuffix(n, ".dylib"):
		return "dylib"
	case strings.HasSuffix(n, ".so"), strings.Contains(n, ".so."):
		return "so"
	}
	return ""
}

// noNamesReason says why a library was not looked for on goos: none of
// the names its caller gave is one of goos's.
func noNamesReason(goos string) string {
	if goos == "darwin" {
		return "CUDA does not run on macOS"
	}
	return "cudarepl knows no file name of it for " + goos
}

// subject is what Open looks for, from what it says when it is missing:
// "NVRTC" from "NVRTC not found", "NVIDIA driver" from "no NVIDIA driver
// found".
func subject(what string) string {
	what = strings.TrimSuffix(strings.TrimSuffix(what, " not found"), " found")
	return strings.TrimPrefix(what, "no ")
}

// Bind registers each C symbol into its Go function pointer (a pointer to
// a func variable, as purego.RegisterFunc takes). Symbols in optional may
// be missing (older library versions); the others may not.
func (l *Library) Bind(syms map[string]any, optional ...string) error {
	opt := map[string]bool{}
	for _, o := range optional {
		opt[o] = true
	}
	for name, fptr := range syms {
		addr, err := lookup(l.handle, name)
		if err != nil {
			if opt[name] {
				continue
			}
			return &UnavailableError{Reason: fmt.Sprintf("%s has no symbol %s; it is too old", l.Name, name), Err: err}
		}
		purego.RegisterFunc(fptr, addr)
	}
	return nil
}

// Symbol returns the address of the C symbol name, for a caller that
// calls it with purego.SyscallN rather than through a bound function.
func (l *Library) Symbol(name string) (uintptr, error) { return lookup(l.handle, name) }

// GoString copies a NUL-terminated C string; "" for nil.
func GoString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := p; *q != 0; q = nextByte(q) {
		b = append(b, *q)
	}
	return string(b)
}

// nextByte steps a C string pointer by one byte.
func nextByte(p *byte) *byte { return (*byte)(unsafe.Add(unsafe.Pointer(p), 1)) }

// CString returns a NUL-terminated copy of s for C to read.
func CString(s string) []byte { return append([]byte(s), 0) }
