package gpu

import (
	"strings"
	"testing"
	"time"
)

func ms(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * 1e6)
	}
	return out
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		desc string
		in   []time.Duration
		want Stats
	}{
		{"empty", nil, Stats{}},
		{"one", ms(2), Stats{N: 1, Median: 2e6, Min: 2e6, Max: 2e6, Mean: 2e6, P10: 2e6, P90: 2e6}},
		{"odd, unsorted", ms(5, 1, 3), Stats{N: 3, Median: 3e6, Min: 1e6, Max: 5e6, Mean: 3e6, StdDev: 2e6, P10: 1.4e6, P90: 4.6e6}},
		{"even", ms(1, 2, 3, 4), Stats{N: 4, Median: 2.5e6, Min: 1e6, Max: 4e6, Mean: 2.5e6, StdDev: 1290994, P10: 1.3e6, P90: 3.7e6}},
	}
	for _, tt := range tests {
		if got := Summarize(tt.in); got != tt.want {
			t.Errorf("%s: Summarize(%v) =\n%+v\nwant\n%+v", tt.desc, tt.in, got, tt.want)
		}
	}
}

func TestStatsRateAndSpread(t *testing.T) {
	s := Summarize(ms(1, 2, 3))
	if got := s.Rate(2e9); got != 1e12 { // 2 GB in 2 ms
		t.Errorf("Rate = %v, want 1e12", got)
	}
	if got := s.Spread(); got < 0.79 || got > 0.81 { // (2.8-1.2)/2
		t.Errorf("Spread = %v, want 0.8", got)
	}
	if got := (Stats{}).Rate(1); got != 0 {
		t.Errorf("empty Rate = %v, want 0", got)
	}
	if got := s.String(); got != "median 2.000 ms (min 1.000 ms, max 3.000 ms, n=3)" {
		t.Errorf("String = %q", got)
	}
}

func TestBenchDefaults(t *testing.T) {
	op := Launch{Kernel: Kernel{Name: "k"}}
	tests := []struct {
		desc    string
		b       Bench
		wantErr string
		want    Bench
	}{
		{"no ops", Bench{Name: "x"}, `bench "x": no ops to time`, Bench{}},
		{"empty list", Bench{Name: "x", Ops: [][]Op{{}}}, `op list 0 is empty`, Bench{}},
		{"negative reps", Bench{Name: "x", Ops: [][]Op{{op}}, Reps: -1}, `-1 repetitions`, Bench{}},
		{"filled in", Bench{Ops: [][]Op{{op}}}, "", Bench{Name: "k", Warmup: 3, Reps: 20}},
		{"no warm-up", Bench{Ops: [][]Op{{op}}, Warmup: -1, Reps: 5}, "", Bench{Name: "k", Warmup: 0, Reps: 5}},
	}
	for _, tt := range tests {
		b := tt.b
		err := b.defaults()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.desc, err, tt.wantErr)
			}
			continue
		}
		if err != nil || b.Name != tt.want.Name || b.Warmup != tt.want.Warmup || b.Reps != tt.want.Reps {
			t.Errorf("%s: got %q warmup %d reps %d (%v), want %q %d %d", tt.desc, b.Name, b.Warmup, b.Reps, err, tt.want.Name, tt.want.Warmup, tt.want.Reps)
		}
	}
}
