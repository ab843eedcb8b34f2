package dl

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

// exeSuffix ends the file names of programs on Windows.
const exeSuffix = ".exe"

var (
	kernel32               = syscall.NewLazyDLL("kernel32.dll") // from System32 only: Go knows it as a system DLL
	procLoadLibraryExW     = kernel32.NewProc("LoadLibraryExW")
	procGetModuleFileNameW = kernel32.NewProc("GetModuleFileNameW")
)

// loadWithAlteredSearchPath makes LoadLibraryExW look for the DLLs that a
// DLL given by its full path needs in that DLL's folder first
// (cublas64_12.dll needs cublasLt64_12.dll beside it).
const loadWithAlteredSearchPath = 0x00000008

// openLibrary loads the DLL path. A bare name is searched for as
// LoadLibrary does (the program's folder, System32, the Windows folder,
// the current folder, PATH): nvcuda.dll and nvml.dll are in System32, and
// the CUDA installer puts its bin folder on PATH. A DLL loaded from a
// folder of libDirs puts that folder on this process's PATH, so that the
// DLLs it loads itself later by name (cuDNN's engine libraries) are found
// there too.
func openLibrary(path string) (uintptr, error) {
	if !filepath.IsAbs(path) {
		h, err := syscall.LoadLibrary(path)
		return uintptr(h), err
	}
	p, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return 0, err
	}
	h, _, callErr := procLoadLibraryExW.Call(uintptr(unsafe.Pointer(p)), 0, loadWithAlteredSearchPath)
	if h == 0 {
		return 0, callErr
	}
	prependPath(filepath.Dir(path))
	return h, nil
}

// prependPath puts dir first on PATH, unless PATH holds it already.
func prependPath(dir string) {
	path := os.Getenv("PATH")
	for _, d := range filepath.SplitList(path) {
		if strings.EqualFold(filepath.Clean(d), filepath.Clean(dir)) {
			return
		}
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+path)
}

// lookup returns the address of the function name in DLL h.
func lookup(h uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(h), name)
}

// modulePath is the full path of DLL h, as Windows found it; opened where
// Windows does not say.
func modulePath(h uintptr, opened string) string {
	buf := make([]uint16, 4*syscall.MAX_PATH)
	n, _, _ := procGetModuleFileNameW.Call(h, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if n == 0 || int(n) >= len(buf) {
		return opened
	}
	return syscall.UTF16ToString(buf[:n])
}

// libDirs lists the folders searched after LoadLibrary's own.
func libDirs() []string { return windowsLibDirs(os.Getenv) }

// toolDirs lists the folders Tool searches after PATH.
func toolDirs() []string { return windowsToolkitBins(os.Getenv) }
