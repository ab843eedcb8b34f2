package gpu

import "fmt"

// The resources whose peak a GPU's attributes give: DRAM bandwidth, and
// arithmetic in each precision (tensor cores for all but FP32).
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

// Peak is what the GPU can do at most for one resource, computed from its
// attributes: the rate (bytes/s for PeakDRAM, FLOP/s otherwise) and how it
// was computed, e.g. "2 × 2619 MHz × 5120 bit". ok is false where the
// driver does not report what it takes, or the architecture is not in the
// table.
func (d DeviceInfo) Peak(resource string) (rate float64, how string, ok bool) {
	if resource == PeakPCIe {
		if !d.PCIe.Known() {
			return 0, "", false
		}
		return d.PCIe.GBs() * 1e9, fmt.Sprintf("PCIe Gen%d x%d, %.1f GT/s a lane", d.PCIe.Gen(), d.PCIe.MaxWidth, d.PCIe.MaxGTs), true
	}
	if resource == PeakDRAM {
		if d.MemClockKHz == 0 || d.BusWidthBits == 0 {
			return 0, "", false
		}
		return d.PeakBandwidth(), fmt.Sprintf("2 × %d MHz memory clock × %d-bit bus", d.MemClockKHz/1000, d.BusWidthBits), true
	}
	per, ok := flopsPerSMClock[[2]int{d.Major, d.Minor}][resource]
	if !ok || d.ClockKHz == 0 || d.SMs == 0 {
		return 0, "", false
	}
	rate = float64(d.SMs) * float64(d.ClockKHz) * 1e3 * per
	return rate, fmt.Sprintf("%d SMs × %d MHz × %.0f FLOP per SM per clock", d.SMs, d.ClockKHz/1000, per), true
}
