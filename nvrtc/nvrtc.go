package nvrtc

import (
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"cudarepl/internal/dl"
)

// nvrtcAPI holds the NVRTC entry points, bound from libnvrtc.
// See https://docs.nvidia.com/cuda/nvrtc/.
type nvrtcAPI struct {
	lib     *dl.Library
	version string // e.g. "11.8"

	nvrtcVersion           func(major, minor *int32) int32
	nvrtcGetErrorString    func(r int32) *byte
	nvrtcCreateProgram     func(prog *uintptr, src, name string, nHeaders int32, headers, names *uintptr) int32
	nvrtcCompileProgram    func(prog uintptr, nOpts int32, opts *uintptr) int32
	nvrtcGetProgramLogSize func(prog uintptr, n *uint64) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcGetCUBINSize      func(prog uintptr, n *uint64) int32
	nvrtcGetCUBIN          func(prog uintptr, out *byte) int32
	nvrtcGetPTXSize        func(prog uintptr, n *uint64) int32
	nvrtcGetPTX            func(prog uintptr, out *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
	nvrtcAddNameExpression func(prog uintptr, expr string) int32
	nvrtcGetLoweredName    func(prog uintptr, expr string, lowered **byte) int32
}

var loadNVRTC = sync.OnceValues(func() (*nvrtcAPI, error) {
	defer dl.KeepSignalHandlers()() // loading runs LLVM's static constructors
	lib, err := dl.Open("nvrtc", "NVRTC not found", "install the CUDA toolkit, or Debian's libnvrtc11.2 (in non-free: the README's Set up says how), or set CUDA_PATH",
		"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so",
		"nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll")
	if err != nil {
		return nil, err
	}
	n := &nvrtcAPI{lib: lib}
	err = lib.Bind(map[string]any{
		"nvrtcVersion":           &n.nvrtcVersion,
		"nvrtcGetErrorString":    &n.nvrtcGetErrorString,
		"nvrtcCreateProgram":     &n.nvrtcCreateProgram,
		"nvrtcCompileProgram":    &n.nvrtcCompileProgram,
		"nvrtcGetProgramLogSize": &n.nvrtcGetProgramLogSize,
		"nvrtcGetProgramLog":     &n.nvrtcGetProgramLog,
		"nvrtcGetCUBINSize":      &n.nvrtcGetCUBINSize,
		"nvrtcGetCUBIN":          &n.nvrtcGetCUBIN,
		"nvrtcGetPTXSize":        &n.nvrtcGetPTXSize,
		"nvrtcGetPTX":            &n.nvrtcGetPTX,
		"nvrtcDestroyProgram":    &n.nvrtcDestroyProgram,
		"nvrtcAddNameExpression": &n.nvrtcAddNameExpression,
		"nvrtcGetLoweredName":    &n.nvrtcGetLoweredName,
	})
	if err != nil {
		return nil, err
	}
	var major, minor int32
	if r := n.nvrtcVersion(&major, &minor); r != 0 {
		return nil, n.check(r, "nvrtcVersion")
	}
	n.version = fmt.Sprintf("%d.%d", major, minor)
	return n, nil
})

// Version returns the version of the NVRTC that Compile uses, e.g.
// "13.0", or the *dl.UnavailableError that says why NVRTC cannot be loaded.
func Version() (string, error) {
	n, err := loadNVRTC()
	if err != nil {
		return "", err
	}
	return n.version, nil
}

func (n *nvrtcAPI) check(r int32, call string) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("gpu: %s: %s", call, dl.GoString(n.nvrtcGetErrorString(r)))
}

// compile runs NVRTC on src and returns the CUBIN and the log, and for
// each of exprs (a C++ kernel's name) the symbol NVRTC gave it.
// compiled is what one NVRTC compile gives back.
type compiled struct {
	cubin   []byte
	ptx     string // the PTX the CUBIN was assembled from
	log     string
	lowered map[string]string
}

// compile hands NVRTC the headers (include name → text) by name, so that
// the source's #include "name" finds them with no file on disk.
func (n *nvrtcAPI) compile(name, src string, headers map[string]string, opts, exprs []string) (compiled, error) {
	var out compiled
	defer dl.KeepSignalHandlers()()
	var pin runtime.Pinner
	defer pin.Unpin()
	hnames := slices.Sorted(maps.Keys(headers))
	htexts := make([]string, len(hnames))
	for i, h := range hnames {
		htexts[i] = headers[h]
	}
	var prog uintptr
	if err := n.check(n.nvrtcCreateProgram(&prog, src, name, int32(len(hnames)), cArray(&pin, htexts), cArray(&pin, hnames)), "nvrtcCreateProgram"); err != nil {
		return out, err
	}
	defer n.nvrtcDestroyProgram(&prog)
	for _, e := range exprs {
		if err := n.check(n.nvrtcAddNameExpression(prog, e), "nvrtcAddNameExpression "+e); err != nil {
			return out, err
		}
	}

	res := n.nvrtcCompileProgram(prog, int32(len(opts)), cArray(&pin, opts))

	var logSize uint64
	if n.nvrtcGetProgramLogSize(prog, &logSize) == 0 && logSize > 1 {
		buf := make([]byte, logSize)
		if n.nvrtcGetProgramLog(prog, &buf[0]) == 0 {
			out.log = strings.TrimRight(string(buf[:logSize-1]), "\n")
		}
	}
	if res != 0 {
		return out, newCompileError(name, out.log, n.check(res, "nvrtcCompileProgram"))
	}
	var size uint64
	if err := n.check(n.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize"); err != nil {
		return out, err
	}
	if size == 0 {
		return out, fmt.Errorf("gpu: nvrtc: %s: no CUBIN produced (was a virtual architecture compute_XX given?)", name)
	}
	out.cubin = make([]byte, size)
	if err := n.check(n.nvrtcGetCUBIN(prog, &out.cubin[0]), "nvrtcGetCUBIN"); err != nil {
		return out, err
	}
	if n.nvrtcGetPTXSize(prog, &size) == 0 && size > 1 {
		buf := make([]byte, size)
		if n.nvrtcGetPTX(prog, &buf[0]) == 0 {
			out.ptx = string(buf[:size-1])
		}
	}
	if len(exprs) > 0 {
		out.lowered = map[string]string{}
	}
	for _, e := range exprs {
		var p *byte
		if err := n.check(n.nvrtcGetLoweredName(prog, e, &p), "nvrtcGetLoweredName "+e); err != nil {
			return out, err
		}
		out.lowered[e] = dl.GoString(p)
	}
	return out, nil
}

// cArray returns ss as a C array of C strings, pinned until pin is
// unpinned: its first element, or nil for none.
func cArray(pin *runtime.Pinner, ss []string) *uintptr {
	if len(ss) == 0 {
		return nil
	}
	ptrs := make([]uintptr, len(ss))
	for i, s := range ss {
		c := dl.CString(s)
		pin.Pin(&c[0])
		ptrs[i] = uintptr(unsafe.Pointer(&c[0]))
	}
	pin.Pin(&ptrs[0])
	return &ptrs[0]
}

// CompileError is a CUDA C source that NVRTC rejected. Error gives the first
// error as file:line: message, followed by the whole log.
type CompileError struct {
	File string // the source name given to Compile
	Line int    // line of the first error, 0 if the log names none
	Msg  string // the first error's message
	Hint string // how to mend it, where cudarepl knows (a missing toolkit header)
	Log  string // NVRTC's whole log
}

var (
	nvrtcErrLine  = regexp.MustCompile(`(?m)^(.*)\((\d+)\): (?:catastrophic )?error[^:]*: (.*)$`)
	nvrtcNoHeader = regexp.MustCompile(`(?:cannot|could not) open source file "([^"]+)"`)
)

func newCompileError(name, log string, cause error) *CompileError {
	e := &CompileError{File: name, Log: log}
	if m := nvrtcErrLine.FindStringSubmatch(log); m != nil {
		e.Line, _ = strconv.Atoi(m[2])
		e.Msg = strings.TrimSpace(m[3])
	} else if cause != nil {
		e.Msg = cause.Error()
	}
	if m := nvrtcNoHeader.FindStringSubmatch(e.Msg); m != nil {
		e.Hint = headerHint(m[1])
	}
	return e
}

// diagnosticLine starts one diagnostic of NVRTC's log: file(line): kind.
var diagnosticLine = regexp.MustCompile(`^(.*)\((\d+)\): (?:catastrophic )?(error|warning)`)

// focus returns e as the author of file sees it: only the errors (each
// with the source line and caret NVRTC prints under it) on lines of file,
// or, where none is, the errors elsewhere; the first of them, and file as
// the error's file where it has one there.
func (e *CompileError) focus(file string) *CompileError {
	type diag struct {
		file, kind string
		text       string
	}
	var diags []diag
	for _, line := range strings.Split(e.Log, "\n") {
		if m := diagnosticLine.FindStringSubmatch(line); m != nil {
			diags = append(diags, diag{file: m[1], kind: m[3], text: line})
			continue
		}
		if len(diags) > 0 && !strings.Contains(line, "detected in the compilation of") {
			diags[len(diags)-1].text += "\n" + line
		}
	}
	// The errors on the author's lines; where they have none (an error of
	// theirs shows in the file's own code), the errors elsewhere. Warnings
	// stay out: a compile that failed has errors to mend first.
	keep := func(d diag) bool { return d.file == file && d.kind == "error" }
	if !slices.ContainsFunc(diags, keep) {
		keep = func(d diag) bool { return d.kind == "error" }
	}
	var kept []string
	for _, d := range diags {
		if keep(d) {
			kept = append(kept, strings.TrimRight(d.text, "\n "))
		}
	}
	out := newCompileError(e.File, strings.Join(kept, "\n\n"), nil)
	if out.Line == 0 { // the log named no error line: keep what Compile found
		out.Line, out.Msg = e.Line, e.Msg
	}
	if m := nvrtcErrLine.FindStringSubmatch(out.Log); m != nil && m[1] == file {
		out.File = file
	}
	out.Hint = e.Hint
	return out
}

func (e *CompileError) Error() string {
	head := fmt.Sprintf("gpu: nvrtc: %s: %s", e.File, e.Msg)
	if e.Line > 0 {
		head = fmt.Sprintf("gpu: nvrtc: %s:%d: %s", e.File, e.Line, e.Msg)
	}
	if e.Hint != "" {
		head += "\n" + e.Hint
	}
	if e.Log == "" {
		return head
	}
	return head + "\n" + e.Log
}
