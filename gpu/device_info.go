package gpu

import "fmt"

// DeviceInfo describes one GPU: what it is and the limits a kernel meets.
type DeviceInfo struct {
	Name                   string // e.g. "NVIDIA H100 80GB HBM3"
	Major, Minor           int    // compute capability
	SMs                    int    // streaming multiprocessors
	ClockKHz               int    // peak SM clock
	MemClockKHz            int    // peak memory clock
	BusWidthBits           int    // global memory bus width
	GlobalMem              int64  // bytes
	L2Bytes                int64
	ConstMem               int64
	SharedPerBlock         int64 // without opting in
	SharedPerBlockOptin    int64 // with cuFuncSetAttribute
	SharedPerSM            int64
	ReservedSharedPerBlock int64 // taken by the system from each block's share
	RegsPerBlock           int
	RegsPerSM              int
	MaxThreadsPerBlock     int
	MaxThreadsPerSM        int
	MaxBlocksPerSM         int
	WarpSize               int
	AsyncEngines           int
	ECC                    bool
	DriverVersion          string // the kernel module's release, e.g. "580.159.04"
	CUDAVersion            string // the CUDA version the driver supports, e.g. "13.0"
	NVRTCVersion           string // "" where NVRTC is missing
	CUBLASVersion          string // "" where cuBLAS is missing
}

// Arch is the NVRTC architecture name of the device, e.g. "sm_90".
// TwoWaves is how many blocks of block threads fill every SM twice at full
// occupancy (each SM holds MaxThreadsPerSM/block of them): the most a
// grid-stride kernel needs, since more blocks only queue behind these.
func (d DeviceInfo) TwoWaves(block int) int { return 2 * d.SMs * d.MaxThreadsPerSM / block }

func (d DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", d.Major, d.Minor) }

// FeatureArch is the architecture to compile for so that kernels may use
// this device's architecture-specific instructions: "sm_90a" on compute
// capability 9.0 (Hopper's wgmma and setmaxnreg) where NVRTC is 12.0 or
// newer, else Arch. Code for sm_90a runs on 9.0 devices only, which is why
// it is not the default. Kernels test __CUDA_ARCH_FEAT_SM90_ALL to know.
func (d DeviceInfo) FeatureArch(nvrtcVersion string) string {
	var major int
	if d.Major == 9 && d.Minor == 0 {
		if _, err := fmt.Sscanf(nvrtcVersion, "%d.", &major); err == nil && major >= 12 {
			return "sm_90a"
		}
	}
	return d.Arch()
}

// PeakBandwidth is the theoretical DRAM bandwidth in bytes per second:
// two transfers per memory clock (DDR) across the bus width. It is 0 where
// the driver does not report the memory clock.
func (d DeviceInfo) PeakBandwidth() float64 {
	return 2 * float64(d.MemClockKHz) * 1e3 * float64(d.BusWidthBits) / 8
}

// Rows returns the device as label/value pairs with units, in a stable order,
// for tables.
func (d DeviceInfo) Rows() [][2]string {
	rows := [][2]string{
		{"GPU", d.Name},
		{"compute capability", fmt.Sprintf("%d.%d (%s)", d.Major, d.Minor, d.Arch())},
		{"driver / CUDA", fmt.Sprintf("%s / %s", orDash(d.DriverVersion), orDash(d.CUDAVersion))},
		{"NVRTC / cuBLAS", fmt.Sprintf("%s / %s", orDash(d.NVRTCVersion), orDash(d.CUBLASVersion))},
		{"SMs", fmt.Sprintf("%d", d.SMs)},
		{"SM clock", mhz(d.ClockKHz)},
		{"global memory", fmt.Sprintf("%.1f GiB", float64(d.GlobalMem)/(1<<30))},
		{"memory bus / clock", fmt.Sprintf("%d bit / %s", d.BusWidthBits, mhz(d.MemClockKHz))},
		{"theoretical bandwidth", gbps(d.PeakBandwidth())},
		{"L2 cache", fmt.Sprintf("%.1f MiB", float64(d.L2Bytes)/(1<<20))},
		{"shared memory / block", fmt.Sprintf("%d KiB (%d KiB opt-in)", d.SharedPerBlock>>10, d.SharedPerBlockOptin>>10)},
		{"shared memory / SM", fmt.Sprintf("%d KiB", d.SharedPerSM>>10)},
		{"registers / SM", fmt.Sprintf("%d × 32 bit (%d per block)", d.RegsPerSM, d.RegsPerBlock)},
		{"threads / block, / SM", fmt.Sprintf("%d, %d", d.MaxThreadsPerBlock, d.MaxThreadsPerSM)},
		{"blocks / SM", fmt.Sprintf("%d", d.MaxBlocksPerSM)},
		{"warp size", fmt.Sprintf("%d threads", d.WarpSize)},
		{"copy engines", fmt.Sprintf("%d", d.AsyncEngines)},
		{"ECC", map[bool]string{true: "on", false: "off"}[d.ECC]},
	}
	return rows
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func mhz(khz int) string {
	if khz == 0 {
		return "—"
	}
	return fmt.Sprintf("%d MHz", khz/1000)
}

func gbps(bytesPerSec float64) string {
	if bytesPerSec == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f GB/s", bytesPerSec/1e9)
}

// CUdevice_attribute values, from cuda.h.
const (
	attrMaxThreadsPerBlock     = 1
	attrMaxSharedPerBlock      = 8
	attrTotalConstantMemory    = 9
	attrWarpSize               = 10
	attrMaxRegistersPerBlock   = 12
	attrClockRate              = 13
	attrMultiprocessorCount    = 16
	attrECCEnabled             = 32
	attrMemoryClockRate        = 36
	attrGlobalMemoryBusWidth   = 37
	attrL2CacheSize            = 38
	attrMaxThreadsPerSM        = 39
	attrAsyncEngineCount       = 40
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
	attrMaxSharedPerSM         = 81
	attrMaxRegistersPerSM      = 82
	attrMaxSharedPerBlockOptin = 97
	attrMaxBlocksPerSM         = 106
	attrReservedSharedPerBlock = 111
)

// queryDevice reads the attributes of device dev.
func (d *driverAPI) queryDevice(dev int32) (DeviceInfo, error) {
	var info DeviceInfo
	name := make([]byte, 256)
	if err := d.check(d.cuDeviceGetName(&name[0], int32(len(name)), dev), "cuDeviceGetName", ""); err != nil {
		return info, err
	}
	info.Name = goString(&name[0])
	var total uint64
	if err := d.check(d.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem_v2", ""); err != nil {
		return info, err
	}
	info.GlobalMem = int64(total)
	attr := func(a int32) int {
		var v int32
		if d.cuDeviceGetAttribute(&v, a, dev) != 0 {
			return 0 // attributes newer than the driver read as unknown
		}
		return int(v)
	}
	info.Major = attr(attrComputeCapabilityMajor)
	info.Minor = attr(attrComputeCapabilityMinor)
	info.SMs = attr(attrMultiprocessorCount)
	info.ClockKHz = attr(attrClockRate)
	info.MemClockKHz = attr(attrMemoryClockRate)
	info.BusWidthBits = attr(attrGlobalMemoryBusWidth)
	info.L2Bytes = int64(attr(attrL2CacheSize))
	info.ConstMem = int64(attr(attrTotalConstantMemory))
	info.SharedPerBlock = int64(attr(attrMaxSharedPerBlock))
	info.SharedPerBlockOptin = int64(attr(attrMaxSharedPerBlockOptin))
	info.SharedPerSM = int64(attr(attrMaxSharedPerSM))
	info.ReservedSharedPerBlock = int64(attr(attrReservedSharedPerBlock))
	info.RegsPerBlock = attr(attrMaxRegistersPerBlock)
	info.RegsPerSM = attr(attrMaxRegistersPerSM)
	info.MaxThreadsPerBlock = attr(attrMaxThreadsPerBlock)
	info.MaxThreadsPerSM = attr(attrMaxThreadsPerSM)
	info.MaxBlocksPerSM = attr(attrMaxBlocksPerSM)
	info.WarpSize = attr(attrWarpSize)
	info.AsyncEngines = attr(attrAsyncEngineCount)
	info.ECC = attr(attrECCEnabled) != 0
	var v int32
	if d.cuDriverGetVersion(&v) == 0 {
		info.CUDAVersion = cudaVersionString(int(v))
	}
	info.DriverVersion = kernelModuleVersion()
	return info, nil
}
