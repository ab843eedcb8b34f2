//go:build gpu

package gpu_test

import (
	"testing"

	"cudarepl/gpu"
	"cudarepl/internal/gputest"
)

// TestGPUBenchTrace: a traced bench, through the worker, keeps each timed
// repetition's end and device time (the same as Timing.Device), in order,
// and as many readings as its conditions sum up.
func TestGPUBenchTrace(t *testing.T) {
	w := gputest.Open(t)
	const n = 1 << 24
	p := gputest.Alloc(t, w, 4*n)
	ops := []gpu.Op{gpu.Memset{Dst: p, Value: 1, Count: n}, gpu.Memset{Dst: p, Value: 2, Count: n}}
	tm, err := w.Bench(gpu.Bench{Name: "traced memsets", Ops: [][]gpu.Op{ops}, Warmup: -1, Reps: 50, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	tr := tm.Trace
	if tr == nil {
		t.Fatal("Timing.Trace is nil, want a trace")
	}
	if tr.OpsPerRep != 2 || len(tr.Reps) != len(tm.Device) {
		t.Fatalf("trace: %d ops a repetition, %d repetitions; want 2 and %d", tr.OpsPerRep, len(tr.Reps), len(tm.Device))
	}
	for i, r := range tr.Reps {
		if d := float64(tm.Device[i].Microseconds()) / 1e3; r.DeviceMs != d {
			t.Errorf("rep %d: %v ms in the trace, %v ms in Device", i, r.DeviceMs, d)
		}
		if i > 0 && r.EndMs < tr.Reps[i-1].EndMs+r.DeviceMs*0.9 {
			t.Errorf("rep %d ends at %v ms, %v ms after rep %d, yet took %v ms", i, r.EndMs, r.EndMs-tr.Reps[i-1].EndMs, i-1, r.DeviceMs)
		}
	}
	if len(tr.Samples) != tm.Conditions.Samples {
		t.Errorf("%d readings in the trace, %d in the conditions", len(tr.Samples), tm.Conditions.Samples)
	}
	if tr.Samples != nil && tr.Samples[0].SMClockMHz == 0 {
		t.Errorf("first reading %+v has no SM clock", tr.Samples[0])
	}
	untraced, err := w.Bench(gpu.Bench{Name: "untraced memsets", Ops: [][]gpu.Op{ops}, Reps: 3})
	if err != nil || untraced.Trace != nil {
		t.Errorf("untraced bench: trace %v, err %v; want none", untraced.Trace, err)
	}
}
