package gpu

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cudarepl/internal/dl"
)

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
	PCIAddress             string // e.g. "0000:1b:00.0"
	PCIe                   PCIeLink
	ECC                    bool
	DriverVersion          string            // the kernel module's release, e.g. "580.159.04"
	CUDAVersion            string            // the CUDA version the driver supports, e.g. "13.0"
	NVRTCVersion           string            // "" where NVRTC is missing
	Libraries              map[string]string // the version of each library registered with RegisterLibrary that loads, by name
	Devices                int               // how many GPUs the driver shows this process (cuDeviceGetCount), this one among them (On)
	PeerAccess             []int             // the other GPUs whose memory this one's kernels and copies reach directly (cuDeviceCanAccessPeer); none where Devices is 1
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
		d.librariesRow(),
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
		{"host link", d.PCIe.String()},
		{"ECC", map[bool]string{true: "on", false: "off"}[d.ECC]},
	}
	return rows
}

// librariesRow is "NVRTC / cuBLAS / …" and their versions: NVRTC's, a
// dash where it is missing, then each library that loaded in the worker.
func (d DeviceInfo) librariesRow() [2]string {
	names, versions := []string{"NVRTC"}, []string{orDash(d.NVRTCVersion)}
	for _, n := range slices.Sorted(maps.Keys(d.Libraries)) {
		names, versions = append(names, n), append(versions, orDash(d.Libraries[n]))
	}
	return [2]string{strings.Join(names, " / "), strings.Join(versions, " / ")}
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
	attrPCIBusID               = 33
	attrPCIDeviceID            = 34
	attrPCIDomainID            = 50
)

// queryDevice reads the attributes of device dev.
func (d *driverAPI) queryDevice(dev int32) (DeviceInfo, error) {
	var info DeviceInfo
	name := make([]byte, 256)
	if err := d.check(d.cuDeviceGetName(&name[0], int32(len(name)), dev), "cuDeviceGetName", ""); err != nil {
		return info, err
	}
	info.Name = dl.GoString(&name[0])
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
	info.PCIAddress = fmt.Sprintf("%04x:%02x:%02x.0", attr(attrPCIDomainID), attr(attrPCIBusID), attr(attrPCIDeviceID))
	info.PCIe = readPCIeLink("/sys/bus/pci/devices/" + info.PCIAddress)
	return info, nil
}

// PCIeLink is the PCI Express link between the host and the GPU, as Linux
// reports it in sysfs: zero where the system does not say.
type PCIeLink struct {
	GTs, MaxGTs     float64 // transfers a second per lane, in billions: now, and the most the link can
	Width, MaxWidth int     // lanes: now, and the most the link can
}

// Known reports whether the link's top speed and width were read.
func (l PCIeLink) Known() bool { return l.MaxGTs > 0 && l.MaxWidth > 0 }

// Gen is the PCIe generation of the link's top speed: 2.5 GT/s is 1, 32 is 5.
func (l PCIeLink) Gen() int {
	if l.MaxGTs <= 0 {
		return 0
	}
	for gen, gts := range []float64{2.5, 5, 8, 16, 32, 64} {
		if l.MaxGTs <= gts+0.01 {
			return gen + 1
		}
	}
	return 0
}

// GBs is the link's nominal rate in each direction at its top speed and
// width, in GB/s: lanes × transfers × the line code's share of payload
// (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s; PCIe 6's FLIT coding
// counted as 242/256) ÷ 8 bits. Packet headers take a further share, so no
// copy reaches it.
func (l PCIeLink) GBs() float64 {
	code := 128.0 / 130
	switch {
	case l.MaxGTs <= 5:
		code = 8.0 / 10
	case l.MaxGTs > 32:
		code = 242.0 / 256
	}
	return float64(l.MaxWidth) * l.MaxGTs * code / 8
}

func (l PCIeLink) String() string {
	if !l.Known() {
		return "PCIe link not reported"
	}
	s := fmt.Sprintf("PCIe Gen%d x%d (%.1f GB/s each way)", l.Gen(), l.MaxWidth, l.GBs())
	if l.GTs > 0 && (l.GTs != l.MaxGTs || l.Width != l.MaxWidth) {
		s += fmt.Sprintf(", running at %.1f GT/s x%d now", l.GTs, l.Width)
	}
	return s
}

// readPCIeLink reads the link of the PCI device at dir (its sysfs folder).
func readPCIeLink(dir string) PCIeLink {
	speed := func(name string) float64 {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64) // "32.0 GT/s PCIe"
		return f
	}
	width := func(name string) int {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	return PCIeLink{GTs: speed("current_link_speed"), MaxGTs: speed("max_link_speed"),
		Width: width("current_link_width"), MaxWidth: width("max_link_width")}
}
