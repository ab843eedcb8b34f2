package gpu

import (
	"time"

	"cudarepl/nvml"
)

// Trace is what a Bench with Trace set saw over time: every reading of the
// GPU's clocks, power and temperature, and when every timed repetition
// ended, each at its time since the bench began (its first reading, taken
// just before the first repetition was enqueued). A repetition's work over
// its device time is the rate it ran at; the readings beside it say why
// that rate changed. Conditions is the same readings summed up.
type Trace struct {
	OpsPerRep int           `json:"ops_per_rep"`       // ops each repetition enqueued (Bench.Ops[0]'s)
	Samples   []TraceSample `json:"samples,omitempty"` // none where NVML cannot be read
	Reps      []TraceRep    `json:"reps"`
}

// TraceSample is one reading of the GPU, through NVML.
type TraceSample struct {
	Ms          float64      `json:"ms"` // since the bench began, when the reading began
	SMClockMHz  int          `json:"sm_mhz"`
	MemClockMHz int          `json:"mem_mhz"`
	PowerW      float64      `json:"power_w"`
	TempC       int          `json:"temp_c"`
	Throttle    nvml.Reasons `json:"throttle,omitempty"` // the bits of nvmlClocksThrottleReasons, idle included; Names says them
}

// TraceRep is one timed repetition.
type TraceRep struct {
	EndMs    float64 `json:"end_ms"`    // since the bench began, when the host saw its end event
	DeviceMs float64 `json:"device_ms"` // between its CUDA events
}

// End is when the trace's last reading or repetition was, in ms since the
// bench began.
func (t Trace) End() float64 {
	end := 0.0
	if n := len(t.Samples); n > 0 {
		end = t.Samples[n-1].Ms
	}
	if n := len(t.Reps); n > 0 {
		end = max(end, t.Reps[n-1].EndMs)
	}
	return end
}

// From returns the part of t from ms on: the readings taken, and the
// repetitions that ended, then or later.
func (t Trace) From(ms float64) Trace {
	out := Trace{OpsPerRep: t.OpsPerRep}
	for _, s := range t.Samples {
		if s.Ms >= ms {
			out.Samples = append(out.Samples, s)
		}
	}
	for _, r := range t.Reps {
		if r.EndMs >= ms {
			out.Reps = append(out.Reps, r)
		}
	}
	return out
}

// msOf is d in milliseconds, to the microsecond: about the resolution of
// CUDA events, and short in JSON.
func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
