package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"cudarepl/gpu"
	"cudarepl/internal/dl"
)

// ncclAPI holds the NCCL entry points, bound from libnccl.so.2. Each C
// signature is nccl.h's; see
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html.
type ncclAPI struct {
	lib     *dl.Library
	version string

	ncclGetVersion     func(v *int32) int32
	ncclGetErrorString func(r int32) *byte
	ncclGetLastError   func(comm uintptr) *byte // NCCL 2.13 on
	ncclCommInitAll    func(comms *uintptr, ndev int32, devlist *int32) int32
	ncclCommDestroy    func(comm uintptr) int32
	ncclGroupStart     func() int32
	ncclGroupEnd       func() int32
	ncclAllReduce      func(send, recv, count uint64, dtype, op int32, comm, stream uintptr) int32
	ncclAllGather      func(send, recv, sendcount uint64, dtype int32, comm, stream uintptr) int32
	ncclReduceScatter  func(send, recv, recvcount uint64, dtype, op int32, comm, stream uintptr) int32
}

// The values of nccl.h's enums that the bindings pass.
const (
	ncclFloat32 = 7 // ncclDataType_t
	ncclSum     = 0 // ncclRedOp_t
)

// PathEnv names the variable that, where set, is the path of the
// libnccl.so.2 to load: then no other is tried.
const PathEnv = "CUDAREPL_NCCL"

// Version returns the version of the NCCL that collectives run on, e.g.
// "2.28.9", or the *dl.UnavailableError that says why it cannot be loaded.
func Version() (string, error) {
	api, err := loadNCCL()
	if err != nil {
		return "", err
	}
	return api.version, nil
}

// hint says how to get NCCL where it is missing.
const hint = "install NCCL (libnccl2) or pip's nvidia-nccl-cu13, or set " + PathEnv + " to libnccl.so.2's path"

// InstallHint says how to get NCCL where it is missing, for a caller that
// finds it missing on the GPUs' machine (DeviceInfo.Libraries has no
// "NCCL").
const InstallHint = hint

// loadNCCL opens NCCL and binds its symbols, once a process.
var loadNCCL = sync.OnceValues(func() (*ncclAPI, error) {
	// NVLink SHARP (multicast objects) stays off: NCCL reads this when
	// it initialises, so it is set before the library can run at all.
	os.Setenv("NCCL_NVLS_ENABLE", "0")
	lib, err := openNCCL(runtime.GOOS, os.Getenv, "/")
	if err != nil {
		return nil, err
	}
	api := &ncclAPI{lib: lib}
	err = lib.Bind(map[string]any{
		"ncclGetVersion":     &api.ncclGetVersion,
		"ncclGetErrorString": &api.ncclGetErrorString,
		"ncclGetLastError":   &api.ncclGetLastError,
		"ncclCommInitAll":    &api.ncclCommInitAll,
		"ncclCommDestroy":    &api.ncclCommDestroy,
		"ncclGroupStart":     &api.ncclGroupStart,
		"ncclGroupEnd":       &api.ncclGroupEnd,
		"ncclAllReduce":      &api.ncclAllReduce,
		"ncclAllGather":      &api.ncclAllGather,
		"ncclReduceScatter":  &api.ncclReduceScatter,
	}, "ncclGetLastError")
	if err != nil {
		return nil, err
	}
	var code int32
	if err := api.check(api.ncclGetVersion(&code), "ncclGetVersion", ""); err != nil {
		return nil, err
	}
	api.version = versionString(int(code))
	return api, nil
})

// openNCCL opens libnccl.so.2 on goos: the file $CUDAREPL_NCCL names and
// nothing else when it is set, else the loader's, else pip's under root.
// NVIDIA builds NCCL for Linux alone.
func openNCCL(goos string, getenv func(string) string, root string) (*dl.Library, error) {
	switch goos {
	case "windows":
		return nil, &dl.UnavailableError{Reason: "NCCL not found (NVIDIA makes NCCL for Linux only, not for Windows)"}
	case "darwin":
		return nil, &dl.UnavailableError{Reason: "NCCL not found (NVIDIA makes NCCL for Linux only, not for macOS)"}
	}
	if p := getenv(PathEnv); p != "" {
		return dl.Open("nccl", "NCCL not found", PathEnv+" names it: point it at libnccl.so.2, or unset it", p)
	}
	return dl.Open("nccl", "NCCL not found", hint, append([]string{"libnccl.so.2", "libnccl.so"}, pipLibraries(getenv, root)...)...)
}

// pipLibraries lists the libnccl.so.2 files that pip's nvidia-nccl-cu12
// and -cu13 wheels installed under root: both put it in
// site-packages/nvidia/nccl/lib (the CUDA 13 wheels of the other
// libraries moved to nvidia/cu13/lib; NCCL's did not). It looks in the
// active virtual environment, in those of /opt/*, and in the system's
// Python folders.
func pipLibraries(getenv func(string) string, root string) []string {
	const lib = "nvidia/nccl/lib/libnccl.so.2"
	var patterns []string
	if v := getenv("VIRTUAL_ENV"); v != "" {
		patterns = append(patterns, filepath.Join(v, "lib/python3*/site-packages", lib))
	}
	for _, p := range []string{
		"opt/*/.venv/lib/python3*/site-packages",
		"usr/local/lib/python3*/dist-packages",
		"usr/local/lib/python3*/site-packages",
		"usr/lib/python3/dist-packages",
	} {
		patterns = append(patterns, filepath.Join(root, p, lib))
	}
	var out []string
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		out = append(out, m...)
	}
	return out
}

// versionString reads NCCL_VERSION_CODE: major·10000 + minor·100 + patch
// since 2.9, major·1000 + minor·100 + patch before (nccl.h's NCCL_VERSION
// macro), so 22809 is "2.28.9" and 2708 "2.7.8".
func versionString(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// resultNames are ncclResult_t's values, from nccl.h.
var resultNames = map[int32]string{
	1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
	4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError",
	7: "ncclInProgress", 8: "ncclTimeout",
}

// check turns a ncclResult_t into an error naming call and what it was
// given (detail), with ncclGetErrorString's sentence and, where NCCL
// has one, its last error message, which says more.
func (api *ncclAPI) check(r int32, call, detail string) error {
	if r == 0 {
		return nil
	}
	name, ok := resultNames[r]
	if !ok {
		name = fmt.Sprintf("ncclResult_t(%d)", r)
	}
	msg := dl.GoString(api.ncclGetErrorString(r))
	if api.ncclGetLastError != nil {
		if last := dl.GoString(api.ncclGetLastError(0)); last != "" {
			msg += ": " + last
		}
	}
	return &gpu.CUDAError{Call: call, Detail: detail, Code: int(r), Name: name, Msg: msg}
}

// stateKey names the package's state in an Exec.
type stateKey int

const commsKey stateKey = iota // *comms

// comms is the root context's clique of communicators, one per GPU 0..n-1,
// rank r on GPU r. It is state of the root context, closed with it.
type comms struct {
	api *ncclAPI
	x   *gpu.Exec // the root's
	h   []uintptr // ncclComm_t by rank; nil before the first collective
}

// communicators returns the root's communicators over GPUs 0..n-1, made
// by ncclCommInitAll on first use and made again when n changes; on the
// root's GPU thread. NCCL sets each GPU current as it goes, so the root's
// context is made current again after.
func communicators(x *gpu.Exec, n int) (*comms, error) {
	s, err := x.State(commsKey, func() (any, error) {
		api, err := loadNCCL()
		if err != nil {
			return nil, err
		}
		return &comms{api: api, x: x}, nil
	})
	if err != nil {
		return nil, err
	}
	cs := s.(*comms)
	if len(cs.h) == n {
		return cs, nil
	}
	if old := cs.h; old != nil {
		// A step prepared earlier in this call may still enqueue on
		// them: they go once the call is done.
		x.AfterCall(func() { cs.destroy(old) })
		cs.h = nil
	}
	h := make([]uintptr, n)
	devs := make([]int32, n)
	for i := range devs {
		devs[i] = int32(i)
	}
	err = cs.api.check(cs.api.ncclCommInitAll(&h[0], int32(n), &devs[0]), "ncclCommInitAll", fmt.Sprintf("over GPUs 0..%d", n-1))
	if cerr := x.MakeCurrent(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	cs.h = h
	return cs, nil
}

// destroy frees the communicators h (ncclCommDestroy each, as NCCL's own
// single-process example does), then makes the root current again.
func (cs *comms) destroy(h []uintptr) {
	for _, c := range h {
		if c != 0 {
			cs.api.ncclCommDestroy(c)
		}
	}
	cs.x.MakeCurrent()
}

// Close destroys the communicators, with the root context.
func (cs *comms) Close() error {
	cs.destroy(cs.h)
	cs.h = nil
	return nil
}
