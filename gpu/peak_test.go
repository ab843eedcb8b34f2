package gpu

import (
	"math"
	"testing"
)

// h100 is the H100 80GB HBM3 as its driver describes it.
var h100 = DeviceInfo{Major: 9, Minor: 0, SMs: 132, ClockKHz: 1980000, MemClockKHz: 2619000, BusWidthBits: 5120}

func TestPeak(t *testing.T) {
	tests := []struct {
		dev      DeviceInfo
		resource string
		want     float64 // in units of 1e12 (TB/s or TFLOP/s); 0: none
	}{
		{h100, PeakDRAM, 3.35232},
		{h100, PeakFP32, 66.908},
		{h100, PeakTF32, 535.26},
		{h100, PeakFP16, 1070.5},
		{h100, PeakBF16, 1070.5},
		{h100, PeakFP8, 2141.1},
		{DeviceInfo{Major: 8, Minor: 0, SMs: 108, ClockKHz: 1410000}, PeakFP16, 312.0},
		{DeviceInfo{Major: 8, Minor: 9, SMs: 128, ClockKHz: 2520000}, PeakFP16, 0}, // differs between products
		{DeviceInfo{Major: 12, Minor: 0, SMs: 100, ClockKHz: 2000000}, PeakFP32, 0},
		{DeviceInfo{Major: 9, Minor: 0}, PeakDRAM, 0}, // no memory clock reported
	}
	for _, tt := range tests {
		got, how, ok := tt.dev.Peak(tt.resource)
		if ok != (tt.want > 0) || math.Abs(got/1e12-tt.want) > 0.001*tt.want {
			t.Errorf("sm_%d%d %s: Peak = %.4g (%q), %v; want %.4g×10¹²", tt.dev.Major, tt.dev.Minor, tt.resource, got, how, ok, tt.want)
		}
	}
}
