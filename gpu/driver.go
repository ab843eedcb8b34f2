package gpu

import (
	"fmt"
	"os"
	"regexp"
	"sync"
	"unsafe"

	"cudarepl/internal/dl"

	"github.com/ebitengine/purego"
)

// cuResult is CUresult.
type cuResult int32

// driverAPI holds the driver API entry points used here, bound from
// libcuda.so.1. Versioned symbols (_v2) are the ones the driver keeps stable.
// See https://docs.nvidia.com/cuda/cuda-driver-api/.
type driverAPI struct {
	lib *dl.Library

	cuInit                    func(flags uint32) cuResult
	cuDriverGetVersion        func(v *int32) cuResult
	cuGetErrorName            func(r cuResult, s **byte) cuResult
	cuGetErrorString          func(r cuResult, s **byte) cuResult
	cuDeviceGetCount          func(n *int32) cuResult
	cuDeviceGet               func(d *int32, ordinal int32) cuResult
	cuDeviceGetName           func(name *byte, n int32, d int32) cuResult
	cuDeviceGetAttribute      func(v *int32, attr int32, d int32) cuResult
	cuDeviceTotalMem          func(bytes *uint64, d int32) cuResult
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, d int32) cuResult
	cuDevicePrimaryCtxRelease func(d int32) cuResult
	cuCtxSetCurrent           func(ctx uintptr) cuResult
	cuCtxGetCurrent           func(ctx *uintptr) cuResult
	cuCtxSynchronize          func() cuResult

	// Peer access between the GPUs of one process (peer.go).
	cuDeviceCanAccessPeer func(can *int32, dev, peer int32) cuResult
	cuCtxEnablePeerAccess func(peer uintptr, flags uint32) cuResult
	cuMemcpyPeerAsync     func(dst uint64, dstCtx uintptr, src uint64, srcCtx uintptr, bytes uint64, s uintptr) cuResult

	cuMemGetInfo      func(free, total *uint64) cuResult
	cuMemAlloc        func(p *uint64, bytes uint64) cuResult
	cuMemFree         func(p uint64) cuResult
	cuMemHostAlloc    func(p *unsafe.Pointer, bytes uint64, flags uint32) cuResult
	cuMemFreeHost     func(p unsafe.Pointer) cuResult
	cuMemcpyHtoD      func(dst uint64, src uintptr, bytes uint64) cuResult
	cuMemcpyDtoH      func(dst uintptr, src uint64, bytes uint64) cuResult
	cuMemcpyDtoD      func(dst, src uint64, bytes uint64) cuResult
	cuMemcpyHtoDAsync func(dst uint64, src uintptr, bytes uint64, s uintptr) cuResult
	cuMemcpyDtoHAsync func(dst uintptr, src uint64, bytes uint64, s uintptr) cuResult
	cuMemcpyDtoDAsync func(dst, src uint64, bytes uint64, s uintptr) cuResult
	cuMemsetD32Async  func(dst uint64, v uint32, n uint64, s uintptr) cuResult
	cuMemsetD8Async   func(dst uint64, v uint8, n uint64, s uintptr) cuResult

	cuModuleLoadData                            func(m *uintptr, image *byte) cuResult
	cuModuleUnload                              func(m uintptr) cuResult
	cuModuleGetFunction                         func(f *uintptr, m uintptr, name string) cuResult
	cuFuncGetAttribute                          func(v *int32, attr int32, f uintptr) cuResult
	cuFuncSetAttribute                          func(f uintptr, attr int32, v int32) cuResult
	cuOccupancyMaxActiveBlocksPerMultiprocessor func(n *int32, f uintptr, block int32, dynSmem uint64) cuResult
	// launchAddr is cuLaunchKernel's address, for launch, which calls it
	// without the reflection that a RegisterFunc wrapper costs per call.
	launchAddr uintptr

	cuStreamCreate      func(s *uintptr, flags uint32) cuResult
	cuStreamDestroy     func(s uintptr) cuResult
	cuStreamSynchronize func(s uintptr) cuResult
	cuStreamWaitEvent   func(s, e uintptr, flags uint32) cuResult
	cuEventCreate       func(e *uintptr, flags uint32) cuResult
	cuEventDestroy      func(e uintptr) cuResult
	cuEventRecord       func(e, s uintptr) cuResult
	cuEventSynchronize  func(e uintptr) cuResult
	cuEventElapsedTime  func(ms *float32, start, end uintptr) cuResult

	cuStreamBeginCapture func(s uintptr, mode int32) cuResult
	cuStreamEndCapture   func(s uintptr, g *uintptr) cuResult
	cuGraphInstantiate   func(exec *uintptr, g uintptr, flags uint64) cuResult
	cuGraphLaunch        func(exec, s uintptr) cuResult
	cuGraphExecDestroy   func(exec uintptr) cuResult
	cuGraphDestroy       func(g uintptr) cuResult

	// Stream-ordered allocation (CUDA 11.2) and graph update (CUDA 12);
	// nil on drivers without them.
	cuMemAllocAsync           func(p *uint64, bytes uint64, stream uintptr) cuResult
	cuMemFreeAsync            func(p uint64, stream uintptr) cuResult
	cuDeviceGetDefaultMemPool func(pool *uintptr, dev int32) cuResult
	cuMemPoolGetAttribute     func(pool uintptr, attr int32, v unsafe.Pointer) cuResult
	cuMemPoolSetAttribute     func(pool uintptr, attr int32, v unsafe.Pointer) cuResult
	cuGraphExecUpdate         func(exec, graph uintptr, info unsafe.Pointer) cuResult

	// cuProfilerStart and cuProfilerStop open and close the window a
	// profiler started with --profile-from-start off records (Profile).
	cuProfilerStart func() cuResult
	cuProfilerStop  func() cuResult

	// cuTensorMapEncodeTiled is nil on drivers older than CUDA 12.
	cuTensorMapEncodeTiled func(tmap unsafe.Pointer, dtype int32, rank uint32, addr uint64, dims, strides *uint64,
		box, elemStrides *uint32, interleave, swizzle, l2Promotion, oobFill int32) cuResult
}

var loadDriver = sync.OnceValues(func() (*driverAPI, error) {
	lib, err := dl.Open("driver", "no NVIDIA driver found", "", "libcuda.so.1", "nvcuda.dll")
	if err != nil {
		return nil, err
	}
	d := &driverAPI{lib: lib}
	err = lib.Bind(map[string]any{
		"cuInit":                       &d.cuInit,
		"cuDriverGetVersion":           &d.cuDriverGetVersion,
		"cuGetErrorName":               &d.cuGetErrorName,
		"cuGetErrorString":             &d.cuGetErrorString,
		"cuDeviceGetCount":             &d.cuDeviceGetCount,
		"cuDeviceGet":                  &d.cuDeviceGet,
		"cuDeviceGetName":              &d.cuDeviceGetName,
		"cuDeviceGetAttribute":         &d.cuDeviceGetAttribute,
		"cuDeviceTotalMem_v2":          &d.cuDeviceTotalMem,
		"cuDevicePrimaryCtxRetain":     &d.cuDevicePrimaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": &d.cuDevicePrimaryCtxRelease,
		"cuCtxSetCurrent":              &d.cuCtxSetCurrent,
		"cuCtxSynchronize":             &d.cuCtxSynchronize,
		"cuMemGetInfo_v2":              &d.cuMemGetInfo,
		"cuMemAlloc_v2":                &d.cuMemAlloc,
		"cuMemFree_v2":                 &d.cuMemFree,
		"cuMemHostAlloc":               &d.cuMemHostAlloc,
		"cuMemFreeHost":                &d.cuMemFreeHost,
		"cuMemcpyHtoD_v2":              &d.cuMemcpyHtoD,
		"cuMemcpyDtoH_v2":              &d.cuMemcpyDtoH,
		"cuMemcpyDtoD_v2":              &d.cuMemcpyDtoD,
		"cuMemcpyHtoDAsync_v2":         &d.cuMemcpyHtoDAsync,
		"cuMemcpyDtoHAsync_v2":         &d.cuMemcpyDtoHAsync,
		"cuMemcpyDtoDAsync_v2":         &d.cuMemcpyDtoDAsync,
		"cuMemsetD32Async":             &d.cuMemsetD32Async,
		"cuMemsetD8Async":              &d.cuMemsetD8Async,
		"cuModuleLoadData":             &d.cuModuleLoadData,
		"cuModuleUnload":               &d.cuModuleUnload,
		"cuModuleGetFunction":          &d.cuModuleGetFunction,
		"cuFuncGetAttribute":           &d.cuFuncGetAttribute,
		"cuFuncSetAttribute":           &d.cuFuncSetAttribute,
		"cuOccupancyMaxActiveBlocksPerMultiprocessor": &d.cuOccupancyMaxActiveBlocksPerMultiprocessor,
		"cuStreamCreate":              &d.cuStreamCreate,
		"cuStreamDestroy_v2":          &d.cuStreamDestroy,
		"cuStreamSynchronize":         &d.cuStreamSynchronize,
		"cuStreamWaitEvent":           &d.cuStreamWaitEvent,
		"cuEventCreate":               &d.cuEventCreate,
		"cuEventDestroy_v2":           &d.cuEventDestroy,
		"cuEventRecord":               &d.cuEventRecord,
		"cuEventSynchronize":          &d.cuEventSynchronize,
		"cuEventElapsedTime":          &d.cuEventElapsedTime,
		"cuStreamBeginCapture_v2":     &d.cuStreamBeginCapture,
		"cuStreamEndCapture":          &d.cuStreamEndCapture,
		"cuGraphInstantiateWithFlags": &d.cuGraphInstantiate,
		"cuGraphLaunch":               &d.cuGraphLaunch,
		"cuGraphExecDestroy":          &d.cuGraphExecDestroy,
		"cuGraphDestroy":              &d.cuGraphDestroy,
		"cuTensorMapEncodeTiled":      &d.cuTensorMapEncodeTiled,
		"cuMemAllocAsync":             &d.cuMemAllocAsync,
		"cuMemFreeAsync":              &d.cuMemFreeAsync,
		"cuDeviceGetDefaultMemPool":   &d.cuDeviceGetDefaultMemPool,
		"cuMemPoolGetAttribute":       &d.cuMemPoolGetAttribute,
		"cuMemPoolSetAttribute":       &d.cuMemPoolSetAttribute,
		"cuGraphExecUpdate_v2":        &d.cuGraphExecUpdate,
		"cuProfilerStart":             &d.cuProfilerStart,
		"cuProfilerStop":              &d.cuProfilerStop,
		"cuCtxGetCurrent":             &d.cuCtxGetCurrent,
		"cuDeviceCanAccessPeer":       &d.cuDeviceCanAccessPeer,
		"cuCtxEnablePeerAccess":       &d.cuCtxEnablePeerAccess,
		"cuMemcpyPeerAsync":           &d.cuMemcpyPeerAsync,
	}, "cuProfilerStart", "cuProfilerStop", "cuTensorMapEncodeTiled", "cuMemAllocAsync", "cuMemFreeAsync", "cuDeviceGetDefaultMemPool",
		"cuMemPoolGetAttribute", "cuMemPoolSetAttribute", "cuGraphExecUpdate_v2")
	if err != nil {
		return nil, err
	}
	if d.launchAddr, err = lib.Symbol("cuLaunchKernel"); err != nil {
		return nil, err
	}
	return d, nil
})

// launch calls cuLaunchKernel directly: this is the path that timed launch
// loops take, so it must cost no more than a C call does.
func (d *driverAPI) launch(f uintptr, g, b Dim3, smem uint32, stream uintptr, params *uintptr) cuResult {
	r, _, _ := purego.SyscallN(d.launchAddr, f, uintptr(g.X), uintptr(g.Y), uintptr(g.Z),
		uintptr(b.X), uintptr(b.Y), uintptr(b.Z), uintptr(smem), stream, uintptr(unsafe.Pointer(params)), 0)
	return cuResult(int32(r))
}

// check turns a CUresult into nil or a *CUDAError naming call and detail.
func (d *driverAPI) check(r cuResult, call, detail string) error {
	if r == 0 {
		return nil
	}
	e := &CUDAError{Call: call, Detail: detail, Code: int(r), Name: fmt.Sprintf("CUresult(%d)", r)}
	var s *byte
	if d.cuGetErrorName(r, &s) == 0 {
		e.Name = dl.GoString(s)
	}
	if d.cuGetErrorString(r, &s) == 0 {
		e.Msg = dl.GoString(s)
	}
	return e
}

// kernelModuleVersion reads the NVIDIA kernel module's release, e.g.
// "580.159.04", or "" where the file is missing.
func kernelModuleVersion() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	return parseModuleVersion(string(b))
}

// moduleVersion finds the release on the NVRM line, which reads either
// "... Kernel Module  535.104.05  ..." or "... Open Kernel Module for x86_64  580.159.04  ...".
var moduleVersion = regexp.MustCompile(`Kernel Module\b.*?\s(\d+\.\d+(?:\.\d+)?)\s`)

func parseModuleVersion(s string) string {
	if m := moduleVersion.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// cudaVersionString formats a driver API version such as 13000 as "13.0".
func cudaVersionString(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
