package lessons

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"cudarepl/gpu"
	"cudarepl/gpu/profiler"
)

// ResultSchema names the JSON layout of results files.
const ResultSchema = "cudarepl-results/1"

// Result is one measurement or one check, with what it ran on. Every lesson
// writes the same schema, and the tables, plots and JSON all come from it.
type Result struct {
	Lesson  string `json:"lesson"`
	Step    string `json:"step"`
	Kind    string `json:"kind"`    // "bench", "check", "ceiling" or "profile"
	Variant string `json:"variant"` // kernel or library call, e.g. "vadd_v2", "cuBLAS"
	Size    string `json:"size"`    // e.g. "n=1048576", "4096×4096×4096"
	Dims    []int  `json:"dims"`
	Block   int    `json:"block,omitempty"` // threads per block, where it was chosen
	DType   string `json:"dtype"`

	MedianMs float64 `json:"median_ms,omitempty"`
	MinMs    float64 `json:"min_ms,omitempty"`
	MaxMs    float64 `json:"max_ms,omitempty"`
	Reps     int     `json:"reps,omitempty"`

	// Rounds is the throughput of each round, in order, where the point
	// was measured in several rounds interleaved with the rest of its
	// sweep (Sweep.Rounds), and CeilingRounds the ceiling measured in
	// each; Throughput and the times are then the median round's, and
	// Ceiling the median of CeilingRounds. A ratio pairs rounds (RatioOf).
	// Both are empty for a point measured once.
	Rounds        []float64 `json:"rounds,omitempty"`
	CeilingRounds []float64 `json:"ceiling_rounds,omitempty"`

	Throughput  float64 `json:"throughput,omitempty"` // in Unit
	Unit        string  `json:"unit,omitempty"`       // "GB/s" or "TFLOP/s"
	PeakMem     int64   `json:"peak_mem_bytes,omitempty"`
	ExtraMem    int64   `json:"extra_mem_bytes,omitempty"` // of PeakMem, what the impl took beyond the case's inputs and outputs
	Workspace   int64   `json:"workspace_bytes,omitempty"` // scratch memory a library call asked for
	Ceiling     float64 `json:"ceiling,omitempty"`         // in Unit, measured in the same run: the baseline of a memory-bound problem
	CeilingName string  `json:"ceiling_name,omitempty"`
	Peak        float64 `json:"peak,omitempty"`        // in Unit: the GPU's peak for the resource (NVIDIA's figure, or from its attributes)
	PeakName    string  `json:"peak_name,omitempty"`   // which peak, and where its figure comes from
	PeakSource  string  `json:"peak_source,omitempty"` // gpu.SourceNVIDIA, gpu.SourceNominal or gpu.SourceAttributes

	MaxRelErr float64 `json:"max_rel_err,omitempty"` // checks: worst |out − ref| / (|ref| + 1)
	Tolerance float64 `json:"tolerance,omitempty"`
	Passed    bool    `json:"passed,omitempty"`
	Outcome   string  `json:"outcome,omitempty"`        // what kept it from running: Refused, OutOfMemory, TimedOut, Faulted, Skipped; "" when it ran
	Detail    string  `json:"detail,omitempty"`         // why: a failed check's first mismatch, the refusal's reason
	NeedMem   int64   `json:"need_mem_bytes,omitempty"` // out of memory: the device memory the size needs

	// Conditions is what the GPU reported while it was measured: clocks,
	// power, temperature and throttle reasons (nil where NVML could not
	// be read, and in results recorded before they were kept).
	Conditions *gpu.Conditions `json:"conditions,omitempty"`
	// Trace is the same over time, with when each repetition ended, for a
	// measurement that kept one (gpu.Bench.Trace): a rate and the clocks
	// that explain it, as they changed.
	Trace *gpu.Trace `json:"trace,omitempty"`

	// Kernels, in a profile (Kind "profile"), are the kernels Nsight
	// Compute measured in one run of the variant, with their counters.
	Kernels []profiler.Kernel `json:"kernels,omitempty"`

	GPU    string `json:"gpu"`
	Driver string `json:"driver"`
	CUDA   string `json:"cuda"`
	Date   string `json:"date"`
	Mode   string `json:"mode"` // "live" or "replayed"
}

// conditionsOf is what the GPU reported across the measurements of rs.
func conditionsOf(rs []Result) gpu.Conditions {
	var c gpu.Conditions
	for _, r := range rs {
		if r.Conditions != nil {
			c = c.Merge(*r.Conditions)
		}
	}
	return c
}

// WithTimes returns r with its median, min, max and repetitions taken from st.
func (r Result) WithTimes(st gpu.Stats) Result {
	r.MedianMs, r.MinMs, r.MaxMs, r.Reps = ms(st.Median), ms(st.Min), ms(st.Max), st.N
	return r
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Failed reports whether r is a failure: a check that found wrong
// elements, a kernel that timed out or faulted. A size refused or out of
// memory is not one, nor a size skipped after a failure.
func (r Result) Failed() bool {
	switch r.Outcome {
	case "", TimedOut, Faulted:
		return !r.Passed
	}
	return false
}

// Measured reports whether r holds a measurement: it ran, and was timed.
func (r Result) Measured() bool { return r.Outcome == "" && r.MedianMs > 0 }

// ResultSet is a results file: what one lesson measured in one run.
type ResultSet struct {
	Schema  string   `json:"schema"`
	Results []Result `json:"results"`
}

// Filter returns the results of one step and kind.
func (s ResultSet) Filter(step, kind string) []Result {
	var out []Result
	for _, r := range s.Results {
		if r.Step == step && r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// Source says where the results come from, for figure subtitles and table
// headers: "live on GPU, date" or "replayed from GPU, date", each GPU
// named once with the date of its first result where a set holds results
// of several ("replayed from GPU1, date1 and GPU2, date2": a lesson whose
// later steps were recorded on another GPU).
func (s ResultSet) Source() string {
	if len(s.Results) == 0 {
		return "no results"
	}
	var where []string
	seen := map[string]bool{}
	for _, r := range s.Results {
		if !seen[r.GPU] {
			seen[r.GPU] = true
			where = append(where, r.GPU+", "+r.Date)
		}
	}
	if s.Results[0].Mode == "live" {
		return "live on " + strings.Join(where, " and ")
	}
	return "replayed from " + strings.Join(where, " and ")
}

// loadRecorded reads every results/*.json of a lesson folder, marked replayed.
func loadRecorded(fsys fs.FS) (ResultSet, error) {
	set := ResultSet{Schema: ResultSchema}
	paths, _ := fs.Glob(fsys, "results/*.json")
	sort.Strings(paths)
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return set, err
		}
		s, err := ParseResults(b)
		if err != nil {
			return set, fmt.Errorf("%s: %w", p, err)
		}
		for _, r := range s.Results {
			r.Mode = "replayed"
			set.Results = append(set.Results, r)
		}
	}
	return set, nil
}

// ParseResults decodes a results file and checks its schema.
func ParseResults(b []byte) (ResultSet, error) {
	var s ResultSet
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("results: %w", err)
	}
	if s.Schema != ResultSchema {
		return s, fmt.Errorf("results: schema %q, want %q", s.Schema, ResultSchema)
	}
	return s, nil
}

// WriteResults writes s as indented JSON to path.
func WriteResults(path string, s ResultSet) error {
	s.Schema = ResultSchema
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}
