package lessons

import (
	"encoding/json"
	"fmt"

	"cudarepl/gpu"
)

// PeakTable is where the peaks come from (NVIDIA's figures for the GPUs
// the course knows, the rates per SM and clock for the rest), for messages.
const PeakTable = "the table of peaks in gpu/peak.go"

// peakNames says what each resource's peak is, for tables and figures.
var peakNames = map[string]string{
	gpu.PeakDRAM: "DRAM bandwidth",
	gpu.PeakPCIe: "PCIe link, nominal",
	gpu.PeakFP32: "FP32 peak (CUDA cores)",
	gpu.PeakTF32: "TF32 tensor-core peak",
	gpu.PeakFP16: "FP16 tensor-core peak",
	gpu.PeakBF16: "BF16 tensor-core peak",
	gpu.PeakFP8:  "FP8 tensor-core peak",
}

// peak is the peak bounding impl of p on the GPU info describes, in p's
// unit, with what it is and where it comes from, and what kind of figure
// it is (gpu.SourceNVIDIA, …); 0 and "" where gpu.DeviceInfo.Peak has none
// for that GPU.
func (p *Problem) peak(impl Impl, info gpu.DeviceInfo) (rate float64, name, source string) {
	res := p.Peak
	if impl.Peak != "" {
		res = impl.Peak
	}
	if res == "" {
		return 0, "", ""
	}
	rate, how, ok := info.Peak(res)
	if !ok {
		return 0, "", ""
	}
	return p.units(rate), fmt.Sprintf("%s, %s", peakNames[res], how), info.PeakSource(res)
}

// withPeaks gives each measured result the peak PeakTable gives now for
// the GPU it ran on (this session's, or one recorded with the course), so
// that a result recorded before the table changed, or before results
// carried a peak, is shown against today's figure. A result keeps the peak
// it was recorded with where its GPU is not known or the table has none.
func (s *Session) withPeaks(p *Problem, rs []Result) []Result {
	out := make([]Result, len(rs))
	for i, r := range rs {
		out[i] = r
		if !r.Measured() {
			continue
		}
		info, ok := s.deviceNamed(r.GPU)
		if !ok {
			continue
		}
		im, _ := p.impl(r.Variant)
		if peak, name, source := p.peak(im, info); peak > 0 {
			out[i].Peak, out[i].PeakName, out[i].PeakSource = peak, name, source
		}
	}
	return out
}

// deviceNamed describes the GPU called name: this session's, or one
// recorded with any lesson of the course.
func (s *Session) deviceNamed(name string) (gpu.DeviceInfo, bool) {
	if s.Live() && s.Dev.Info().Name == name {
		return s.Dev.Info(), true
	}
	for _, l := range All() {
		for _, r := range l.recorded.Results {
			var info gpu.DeviceInfo
			if r.Kind == "device" && r.Variant == name && json.Unmarshal([]byte(r.Detail), &info) == nil {
				return info, true
			}
		}
	}
	return gpu.DeviceInfo{}, false
}

// OfPeak is Throughput as a share of Peak, 0 where there is none.
func (r Result) OfPeak() float64 {
	if r.Peak <= 0 {
		return 0
	}
	return r.Throughput / r.Peak
}
