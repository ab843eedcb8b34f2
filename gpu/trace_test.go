package gpu

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"cudarepl/nvml"
)

// TestSamplerTrace: a traced sampler keeps every reading that succeeds, in
// order and at increasing times, beside the summed-up conditions, and each
// repetition's end; an untraced one keeps only the conditions; without
// NVML a trace still has its repetitions.
func TestSamplerTrace(t *testing.T) {
	var n atomic.Int32
	read := func() (nvml.Sample, error) {
		i := n.Add(1)
		if i == 2 {
			return nvml.Sample{}, errors.New("nvml: a reading that failed")
		}
		return nvml.Sample{SMClockMHz: 1980 - 10*int(i), MemClockMHz: 2619, PowerW: 500 + float64(i), PowerLimitW: 700, TempC: 40, Throttle: 0x4}, nil
	}
	s := startSampler(read, &Trace{OpsPerRep: 16}, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	s.ended(26500 * time.Microsecond)
	time.Sleep(5 * time.Millisecond)
	s.ended(27 * time.Millisecond)
	c, tr := s.finish()
	if tr == nil {
		t.Fatal("traced sampler returned no trace")
	}
	if len(tr.Samples) != c.Samples || c.Samples < 3 {
		t.Fatalf("%d samples in the trace, %d in the conditions; want the same, at least 3", len(tr.Samples), c.Samples)
	}
	for i, sm := range tr.Samples {
		if i > 0 && sm.Ms < tr.Samples[i-1].Ms {
			t.Errorf("sample %d at %v ms, before sample %d at %v ms", i, sm.Ms, i-1, tr.Samples[i-1].Ms)
		}
		if sm.SMClockMHz == 1960 {
			t.Errorf("sample %d is the reading that failed: %+v", i, sm)
		}
		if sm.Throttle != 0x4 || sm.MemClockMHz != 2619 || sm.TempC != 40 {
			t.Errorf("sample %d = %+v, want the reading's throttle, memory clock and temperature", i, sm)
		}
	}
	if len(tr.Reps) != 2 || tr.Reps[0].DeviceMs != 26.5 || tr.Reps[1].DeviceMs != 27 || tr.Reps[1].EndMs < tr.Reps[0].EndMs+4 {
		t.Errorf("reps = %+v, want 26.5 ms then 27 ms, ending at least 4 ms apart", tr.Reps)
	}
	if tr.OpsPerRep != 16 {
		t.Errorf("OpsPerRep = %d, want 16", tr.OpsPerRep)
	}

	c, tr = startSampler(read, nil, time.Millisecond).finish()
	if tr != nil || c.Samples < 2 {
		t.Errorf("untraced: trace %v and %d samples, want none and at least 2", tr, c.Samples)
	}

	s = startSampler(nil, &Trace{OpsPerRep: 1}, time.Millisecond)
	s.ended(time.Millisecond)
	c, tr = s.finish()
	if c.Samples != 0 || tr == nil || len(tr.Samples) != 0 || len(tr.Reps) != 1 {
		t.Errorf("without NVML: %d samples, trace %+v; want none, and one repetition", c.Samples, tr)
	}
}

func TestTraceFrom(t *testing.T) {
	tr := Trace{OpsPerRep: 2,
		Samples: []TraceSample{{Ms: 0}, {Ms: 50}, {Ms: 100}, {Ms: 150}},
		Reps:    []TraceRep{{EndMs: 40, DeviceMs: 40}, {EndMs: 80, DeviceMs: 40}, {EndMs: 170, DeviceMs: 90}}}
	if got := tr.End(); got != 170 {
		t.Errorf("End = %v, want 170", got)
	}
	half := tr.From(tr.End() / 2)
	if len(half.Samples) != 2 || half.Samples[0].Ms != 100 || len(half.Reps) != 1 || half.Reps[0].EndMs != 170 || half.OpsPerRep != 2 {
		t.Errorf("From(85) = %+v, want the samples at 100 and 150 ms and the repetition ending at 170", half)
	}
	if got := (Trace{}).End(); got != 0 {
		t.Errorf("empty End = %v, want 0", got)
	}
}
