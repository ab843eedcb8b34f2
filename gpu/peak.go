package gpu

import (
	"fmt"
	"strings"
)

// The resources DeviceInfo.Peak gives a peak for: DRAM bandwidth, the host
// link, and arithmetic in each precision (tensor cores for all but FP32).
const (
	PeakDRAM = "dram" // bytes per second between DRAM and the chip
	PeakPCIe = "pcie" // bytes per second each way over the host link
	PeakFP32 = "fp32" // FP32 FMAs on the CUDA cores
	PeakTF32 = "tf32" // TF32 on the tensor cores (what cuBLAS and cuDNN use for fp32 when allowed)
	PeakFP16 = "fp16" // FP16 on the tensor cores, FP32 accumulation
	PeakBF16 = "bf16" // BF16 on the tensor cores, FP32 accumulation
	PeakFP8  = "fp8"  // FP8 (E4M3, E5M2) on the tensor cores
)

// flopsPerSMClock is the dense arithmetic one SM does per clock, in
// floating-point operations (an FMA is two), by compute capability and
// precision. Sources: NVIDIA's A100 Tensor Core GPU Architecture
// whitepaper (Ampere, 8.0: 64 FP32 FMAs, and 1024 dense FP16 tensor FMAs
// per SM per clock) and NVIDIA's H100 Tensor Core GPU Architecture
// whitepaper (Hopper, 9.0: twice Ampere's tensor rate per SM, and 128 FP32
// FMAs); for 8.6 and 8.9 only FP32 is listed, since their tensor rate with
// FP32 accumulation differs between products.
var flopsPerSMClock = map[[2]int]map[string]float64{
	{8, 0}: {PeakFP32: 128, PeakTF32: 1024, PeakFP16: 2048, PeakBF16: 2048},
	{8, 6}: {PeakFP32: 256},
	{8, 9}: {PeakFP32: 256},
	{9, 0}: {PeakFP32: 256, PeakTF32: 2048, PeakFP16: 4096, PeakBF16: 4096, PeakFP8: 8192},
}

// product is a GPU whose peaks NVIDIA publishes, and how to know it from
// its attributes: compute capability and SM count, and words of its name,
// which tell it from products with the same chip and SM count but other
// memory or clocks (the H200, H100 NVL and GH200 have the H100 SXM's 132
// SMs; the A100's 40 and 80 GB differ in bandwidth), or words it lacks
// (the H200 NVL is an H200 of lower clocks).
type product struct {
	name         string // as NVIDIA's datasheet calls it, e.g. "H100 SXM"
	major, minor int
	sms          int
	nameHas      []string // each is in DeviceInfo.Name
	nameLacks    []string // none is in DeviceInfo.Name
	memory       string   // the DRAM, e.g. "HBM3"
	dram         float64  // bytes per second
	flops        map[string]figure
}

// figure is one of NVIDIA's dense arithmetic peaks, in FLOP/s, and the SM
// clock it is quoted at.
type figure struct {
	rate float64
	mhz  int
}

// products are the GPUs the course knows, with NVIDIA's dense figures
// (the datasheets' tensor-core figures with sparsity are twice these).
// They sit below SMs × the driver's maximum clock × flopsPerSMClock where
// NVIDIA quotes them at a lower clock: table 3 of the H100 whitepaper
// gives the H100 SXM 1830 MHz for tensor-core work and 1980 MHz for the
// rest. TestPeakTableArithmetic checks each figure against its clock.
var products = []product{{
	// NVIDIA H100 Tensor Core GPU datasheet; NVIDIA H100 Tensor Core GPU
	// Architecture whitepaper, table 3 (peaks and the clocks they are at).
	name: "H100 SXM", major: 9, minor: 0, sms: 132, nameHas: []string{"H100", "HBM3"},
	memory: "HBM3", dram: 3.35e12, flops: h100SXMFigures,
}, {
	// NVIDIA H200 Tensor Core GPU datasheet, SXM column: the H100 SXM's
	// arithmetic figures (the same GH100 chip, 132 SMs and clocks; the
	// datasheet rounds them, 1,979 TFLOP/s of FP16 with sparsity) and
	// 4.8 TB/s of HBM3e. The H200 NVL, a lower-power board of the same
	// chip, has lower figures and is not this entry.
	name: "H200 SXM", major: 9, minor: 0, sms: 132, nameHas: []string{"H200"}, nameLacks: []string{"NVL"},
	memory: "HBM3e", dram: 4.8e12, flops: h100SXMFigures,
}, {
	// NVIDIA A100 Tensor Core GPU datasheet; NVIDIA A100 Tensor Core GPU
	// Architecture whitepaper.
	name: "A100 SXM4 40GB", major: 8, minor: 0, sms: 108, nameHas: []string{"A100", "SXM4", "40GB"},
	memory: "HBM2", dram: 1555e9, flops: a100Figures,
}, {
	name: "A100 SXM4 80GB", major: 8, minor: 0, sms: 108, nameHas: []string{"A100", "SXM4", "80GB"},
	memory: "HBM2e", dram: 2039e9, flops: a100Figures,
}}

// h100SXMFigures are the H100 SXM's dense peaks and their clocks (table 3
// of the H100 whitepaper), which the H200 SXM shares.
var h100SXMFigures = map[string]figure{
	PeakFP32: {66.9e12, 1980},
	PeakTF32: {494.7e12, 1830},
	PeakFP16: {989.4e12, 1830},
	PeakBF16: {989.4e12, 1830},
	PeakFP8:  {1978.9e12, 1830},
}

var a100Figures = map[string]figure{
	PeakFP32: {19.5e12, 1410},
	PeakTF32: {156e12, 1410},
	PeakFP16: {312e12, 1410},
	PeakBF16: {312e12, 1410},
}

// productOf is the entry of products that d is, if any.
func productOf(d DeviceInfo) (product, bool) {
	for _, p := range products {
		if p.major != d.Major || p.minor != d.Minor || p.sms != d.SMs {
			continue
		}
		all := true
		for _, w := range p.nameHas {
			all = all && strings.Contains(d.Name, w)
		}
		for _, w := range p.nameLacks {
			all = all && !strings.Contains(d.Name, w)
		}
		if all {
			return p, true
		}
	}
	return product{}, false
}

// Peak is what the GPU can do at most for one resource: the rate (bytes/s
// for PeakDRAM and PeakPCIe, FLOP/s otherwise) and where it comes from,
// short enough to sit under a table. For a GPU in products it is NVIDIA's
// published figure, e.g. "NVIDIA's dense FP16 figure for the H100 SXM, at
// 1830 MHz"; for any other it is computed from the GPU's attributes at its
// maximum clock, and says so. ok is false where the driver does not report
// what it takes, or the architecture is not in flopsPerSMClock.
func (d DeviceInfo) Peak(resource string) (rate float64, how string, ok bool) {
	rate, how, _, ok = d.peak(resource)
	return rate, how, ok
}

// peak is Peak, and what kind of figure it is or would be (Source…):
// the one place that decides both.
func (d DeviceInfo) peak(resource string) (rate float64, how, source string, ok bool) {
	if resource == PeakPCIe {
		if !d.PCIe.Known() {
			return 0, "", SourceNominal, false
		}
		return d.PCIe.GBs() * 1e9, fmt.Sprintf("PCIe Gen%d x%d, %.1f GT/s a lane", d.PCIe.Gen(), d.PCIe.MaxWidth, d.PCIe.MaxGTs), SourceNominal, true
	}
	p, known := productOf(d)
	if resource == PeakDRAM {
		if known {
			return p.dram, fmt.Sprintf("NVIDIA's figure for the %s's %s", p.name, p.memory), SourceNVIDIA, true
		}
		if d.MemClockKHz == 0 || d.BusWidthBits == 0 {
			return 0, "", SourceAttributes, false
		}
		return d.PeakBandwidth(), fmt.Sprintf("2 × %d MHz memory clock × %d-bit bus, %s", d.MemClockKHz/1000, d.BusWidthBits, SourceAttributes), SourceAttributes, true
	}
	if f, ok := p.flops[resource]; ok {
		dense := "dense "
		if resource == PeakFP32 {
			dense = "" // sparsity is for the tensor cores: the CUDA cores have one figure
		}
		return f.rate, fmt.Sprintf("NVIDIA's %s%s figure for the %s, at %d MHz", dense, strings.ToUpper(resource), p.name, f.mhz), SourceNVIDIA, true
	}
	per, ok := flopsPerSMClock[[2]int{d.Major, d.Minor}][resource]
	if !ok || d.ClockKHz == 0 || d.SMs == 0 {
		return 0, "", SourceAttributes, false
	}
	rate = float64(d.SMs) * float64(d.ClockKHz) * 1e3 * per
	return rate, fmt.Sprintf("%d SMs × %d MHz (the maximum clock) × %.0f FLOP per SM per clock, %s", d.SMs, d.ClockKHz/1000, per, SourceAttributes), SourceAttributes, true
}

// PerSMClock is the dense arithmetic one SM does per clock for resource
// (a precision), in FLOP, from the architecture's whitepaper; ok is false
// where the architecture or the precision is not in the table.
func (d DeviceInfo) PerSMClock(resource string) (flop float64, ok bool) {
	flop, ok = flopsPerSMClock[[2]int{d.Major, d.Minor}][resource]
	return flop, ok
}

// Datasheet is NVIDIA's published figure for resource (a precision) on
// this GPU, in FLOP/s, and the SM clock it is quoted at; ok is false for
// a GPU the table of products does not know.
func (d DeviceInfo) Datasheet(resource string) (rate float64, mhz int, ok bool) {
	p, known := productOf(d)
	f, has := p.flops[resource]
	if !known || !has {
		return 0, 0, false
	}
	return f.rate, f.mhz, true
}

// What a peak's figure is, as DeviceInfo.PeakSource says.
const (
	SourceNVIDIA     = "NVIDIA's figure"           // published for this product (gpu/peak.go's table)
	SourceNominal    = "nominal"                   // the link's generation and width
	SourceAttributes = "from the GPU's attributes" // computed at the maximum clock
)

// PeakSource says where Peak's figure for resource comes from on this GPU:
// SourceNVIDIA, SourceNominal or SourceAttributes (what it would be,
// where the driver does not report what Peak takes).
func (d DeviceInfo) PeakSource(resource string) string {
	_, _, source, _ := d.peak(resource)
	return source
}
