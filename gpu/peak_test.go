package gpu

import (
	"math"
	"testing"
)

// The GPUs as their drivers describe them.
var (
	h100      = DeviceInfo{Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0, SMs: 132, ClockKHz: 1980000, MemClockKHz: 2619000, BusWidthBits: 5120}
	a100SXM40 = DeviceInfo{Name: "NVIDIA A100-SXM4-40GB", Major: 8, Minor: 0, SMs: 108, ClockKHz: 1410000, MemClockKHz: 1215000, BusWidthBits: 5120}
	a100SXM80 = DeviceInfo{Name: "NVIDIA A100-SXM4-80GB", Major: 8, Minor: 0, SMs: 108, ClockKHz: 1410000, MemClockKHz: 1593000, BusWidthBits: 5120}
	a100PCIe  = DeviceInfo{Name: "NVIDIA A100 80GB PCIe", Major: 8, Minor: 0, SMs: 108, ClockKHz: 1410000, MemClockKHz: 1512000, BusWidthBits: 5120}
	// h200 has the H100 SXM's chip, SMs and clocks, and other memory;
	// h200NVL is the same chip on a board of lower clocks: not in the
	// table, so its peaks come from its attributes.
	h200    = DeviceInfo{Name: "NVIDIA H200", Major: 9, Minor: 0, SMs: 132, ClockKHz: 1980000, MemClockKHz: 3201000, BusWidthBits: 6144}
	h200NVL = DeviceInfo{Name: "NVIDIA H200 NVL", Major: 9, Minor: 0, SMs: 132, ClockKHz: 1785000, MemClockKHz: 3201000, BusWidthBits: 6144}
)

func TestPeak(t *testing.T) {
	tests := []struct {
		dev      DeviceInfo
		resource string
		want     float64 // in units of 1e12 (TB/s or TFLOP/s); 0: none
		wantHow  string
	}{
		{h100, PeakFP16, 989.4, "NVIDIA's dense FP16 figure for the H100 SXM, at 1830 MHz"},
		{h100, PeakBF16, 989.4, "NVIDIA's dense BF16 figure for the H100 SXM, at 1830 MHz"},
		{h100, PeakTF32, 494.7, "NVIDIA's dense TF32 figure for the H100 SXM, at 1830 MHz"},
		{h100, PeakFP8, 1978.9, "NVIDIA's dense FP8 figure for the H100 SXM, at 1830 MHz"},
		{h100, PeakFP32, 66.9, "NVIDIA's FP32 figure for the H100 SXM, at 1980 MHz"},
		{h100, PeakDRAM, 3.35, "NVIDIA's figure for the H100 SXM's HBM3"},
		{a100SXM40, PeakFP16, 312, "NVIDIA's dense FP16 figure for the A100 SXM4 40GB, at 1410 MHz"},
		{a100SXM40, PeakTF32, 156, "NVIDIA's dense TF32 figure for the A100 SXM4 40GB, at 1410 MHz"},
		{a100SXM40, PeakFP32, 19.5, "NVIDIA's FP32 figure for the A100 SXM4 40GB, at 1410 MHz"},
		{a100SXM40, PeakDRAM, 1.555, "NVIDIA's figure for the A100 SXM4 40GB's HBM2"},
		{a100SXM40, PeakFP8, 0, ""}, // Ampere has no FP8 tensor cores
		{a100SXM80, PeakBF16, 312, "NVIDIA's dense BF16 figure for the A100 SXM4 80GB, at 1410 MHz"},
		{a100SXM80, PeakDRAM, 2.039, "NVIDIA's figure for the A100 SXM4 80GB's HBM2e"},
		{h200, PeakFP16, 989.4, "NVIDIA's dense FP16 figure for the H200 SXM, at 1830 MHz"},
		{h200, PeakDRAM, 4.8, "NVIDIA's figure for the H200 SXM's HBM3e"},
		{h200NVL, PeakFP16, 965.0, "132 SMs × 1785 MHz (the maximum clock) × 4096 FLOP per SM per clock, from the GPU's attributes"},
		{h200NVL, PeakDRAM, 4.9167, "2 × 3201 MHz memory clock × 6144-bit bus, from the GPU's attributes"},
		{a100PCIe, PeakFP16, 311.87, "108 SMs × 1410 MHz (the maximum clock) × 2048 FLOP per SM per clock, from the GPU's attributes"},
		{a100PCIe, PeakDRAM, 1.93536, "2 × 1512 MHz memory clock × 5120-bit bus, from the GPU's attributes"},
		{DeviceInfo{Major: 8, Minor: 9, SMs: 128, ClockKHz: 2520000}, PeakFP16, 0, ""}, // differs between products
		{DeviceInfo{Major: 12, Minor: 0, SMs: 100, ClockKHz: 2000000}, PeakFP32, 0, ""},
		{DeviceInfo{Major: 9, Minor: 0}, PeakDRAM, 0, ""}, // no memory clock reported
	}
	for _, tt := range tests {
		got, how, ok := tt.dev.Peak(tt.resource)
		if ok != (tt.want > 0) || math.Abs(got/1e12-tt.want) > 0.001*tt.want || how != tt.wantHow {
			t.Errorf("%q sm_%d%d: Peak(%s) = %.6g, %q, %v; want %.6g×10¹², %q", tt.dev.Name, tt.dev.Major, tt.dev.Minor, tt.resource, got, how, ok, tt.want, tt.wantHow)
		}
	}
}

// TestPeakTableArithmetic: each of NVIDIA's figures is SMs × the clock it
// is quoted at × the architecture's rate per SM per clock, within 0.1 %,
// so a figure copied wrong, or quoted at another clock than the table
// says, shows.
func TestPeakTableArithmetic(t *testing.T) {
	for _, p := range products {
		for res, f := range p.flops {
			per, ok := flopsPerSMClock[[2]int{p.major, p.minor}][res]
			if !ok {
				t.Errorf("%s %s: sm_%d%d has no rate per SM per clock for it", p.name, res, p.major, p.minor)
				continue
			}
			want := float64(p.sms) * float64(f.mhz) * 1e6 * per
			if math.Abs(f.rate-want) > 0.001*want {
				t.Errorf("%s %s: %.1f TFLOP/s, but %d SMs × %d MHz × %.0f = %.1f", p.name, res, f.rate/1e12, p.sms, f.mhz, per, want/1e12)
			}
		}
	}
}

func TestPeakSource(t *testing.T) {
	for _, c := range []struct {
		d        DeviceInfo
		resource string
		want     string
	}{
		{h100, PeakFP16, SourceNVIDIA},
		{h100, PeakDRAM, SourceNVIDIA},
		{h100, PeakPCIe, SourceNominal},
		{h200, PeakFP16, SourceNVIDIA},
		{h200NVL, PeakFP16, SourceAttributes},
		{h200NVL, PeakDRAM, SourceAttributes},
	} {
		if got := c.d.PeakSource(c.resource); got != c.want {
			t.Errorf("%s %s: source %q, want %q", c.d.Name, c.resource, got, c.want)
		}
	}
}
