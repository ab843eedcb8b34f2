package lessons

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"cudarepl/gpu/profiler"
)

// The columns of a profile table, for ProfileStep.Columns.
const (
	ColTime         = "time"         // the kernels' duration, µs (at the profiler's clock)
	ColDRAM         = "dram"         // bytes read from and written to DRAM, MB
	ColPredicted    = "predicted"    // the bytes the lesson predicts from the code, MB, and DRAM's share of them
	ColSectors      = "sectors"      // 32-byte sectors per global load instruction (4 for a warp's 128 contiguous bytes)
	ColL1           = "l1"           // L1 hit rate, %
	ColL2           = "l2"           // L2 hit rate, %
	ColDRAMBusy     = "dram busy"    // DRAM throughput, % of its peak
	ColConflicts    = "conflicts"    // shared-memory bank conflicts
	ColSMBusy       = "sm busy"      // the SMs' busiest unit, % of its peak
	ColInstructions = "instructions" // warp instructions executed, millions
	ColOccupancy    = "occupancy"    // warps active, % of the SM's: achieved / theoretical
	ColLimiter      = "limiter"      // what bounds the theoretical occupancy
	ColTensor       = "tensor"       // tensor pipe busy, % of cycles
	ColStalls       = "stalls"       // the two reasons warps waited most
)

// MemoryColumns and ComputeColumns are the two tables Profile shows.
var (
	MemoryColumns  = []string{ColTime, ColDRAM, ColPredicted, ColSectors, ColL1, ColL2, ColDRAMBusy, ColConflicts}
	ComputeColumns = []string{ColTime, ColSMBusy, ColInstructions, ColOccupancy, ColLimiter, ColTensor, ColStalls}
)

// counters is one row of a profile: a variant's kernels, summed where the
// counter adds up (time, bytes, instructions) and, for rates, those of its
// longest kernel.
type counters struct {
	sum  map[string]float64
	main profiler.Kernel // the longest kernel
	n    int
}

func countersOf(r Result) counters {
	c := counters{sum: map[string]float64{}, n: len(r.Kernels)}
	for _, k := range r.Kernels {
		for name, v := range k.Metrics {
			if strings.HasSuffix(name, ".sum") {
				c.sum[name] += v
			}
		}
		if d, _ := k.Get(profiler.Duration); c.main.Metrics == nil || d > c.main.Metrics[profiler.Duration] {
			c.main = k
		}
	}
	return c
}

// rate is counter name of the longest kernel; ok false where it is missing.
func (c counters) rate(name string) (float64, bool) { return c.main.Get(name) }

// limiter names what bounds the longest kernel's occupancy: the resource
// that allows the fewest blocks per SM, or "none" at full occupancy.
func (c counters) limiter() string {
	if most, ok := c.rate(profiler.MaxOccupancy); ok && most >= 99.5 {
		return "none"
	}
	names := map[string]string{"registers": "registers", "shared_mem": "shared memory", "warps": "threads per block",
		"blocks": "blocks per SM"}
	best, least := "", 0.0
	for _, key := range profiler.Limits() {
		v, ok := c.rate(profiler.LimitPrefix + key)
		if !ok {
			continue
		}
		if best == "" || v < least {
			best, least = names[key], v
		}
	}
	if best == "" {
		return "–"
	}
	return fmt.Sprintf("%s (%s/SM)", best, Count(int(math.Round(least)), "block"))
}

// stall is one warp-stall reason and how many warps waited for it per
// instruction issued.
type stall struct {
	reason string
	warps  float64
}

// stalls are the longest kernel's stall reasons, most first; "selected"
// (the warp that issued) is not a stall.
func (c counters) stalls() []stall {
	var out []stall
	for name, v := range c.main.Metrics {
		if r, ok := strings.CutPrefix(name, profiler.StallPrefix); ok {
			r = strings.TrimSuffix(r, profiler.StallSuffix)
			if r != "selected" && v > 0 {
				out = append(out, stall{strings.ReplaceAll(r, "_", " "), v})
			}
		}
	}
	slices.SortFunc(out, func(a, b stall) int {
		return cmp.Or(cmp.Compare(b.warps, a.warps), strings.Compare(a.reason, b.reason))
	})
	return out
}

// stallMeanings says what each stall reason waits for, for the notes
// under a table (from Nsight Compute's documentation of warp states).
var stallMeanings = map[string]string{
	"long scoreboard":    "a global or local memory load",
	"short scoreboard":   "shared memory or a special function",
	"barrier":            "the other warps at __syncthreads",
	"mio throttle":       "a full queue into shared memory",
	"lg throttle":        "a full queue into global memory",
	"math pipe throttle": "a busy math pipe",
	"wait":               "a fixed-latency dependency",
	"not selected":       "nothing: ready, another warp issued",
	"no instruction":     "the instruction cache",
	"branch resolving":   "a branch target",
	"dispatch stall":     "the dispatcher",
	"membar":             "a memory barrier",
	"drain":              "its stores, at exit",
	"sleeping":           "a nanosleep or yield",
	"tex throttle":       "a full texture queue",
	"imc miss":           "the constant cache",
	"gmma":               "a wgmma to finish",
	"misc":               "something else",
}

// predictedBytes is the DRAM traffic the code of p's impl called variant
// must cause at size s: the impl's Bytes, the problem's, or its work
// where that is bytes; 0 where the lesson predicts none.
func predictedBytes(p *Problem, variant string, s Size) float64 {
	if p == nil || len(s) == 0 {
		return 0
	}
	if im, err := p.impl(strings.TrimSuffix(variant, yours)); err == nil && im.Bytes != nil {
		return im.Bytes(s)
	}
	switch {
	case p.Bytes != nil:
		return p.Bytes(s)
	case p.Unit == "GB/s":
		return p.Work(s)
	}
	return 0
}

// ProfileTable is the table of rs (profiles of p's impls) with columns,
// a row per variant and size, and notes saying how to read it.
func ProfileTable(p *Problem, rs []Result, columns []string) *Table {
	sizes := map[string]bool{}
	many := false
	for _, r := range rs {
		sizes[r.Size] = true
		many = many || len(r.Kernels) > 1
	}
	t := &Table{Headers: []string{"variant"}, Right: []bool{false}}
	if len(sizes) > 1 {
		t.Headers, t.Right = append(t.Headers, "size"), append(t.Right, false)
	}
	if many {
		t.Headers, t.Right = append(t.Headers, "kernels"), append(t.Right, true)
	}
	heads := map[string][]string{
		ColTime: {"time (µs)"}, ColDRAM: {"DRAM read (MB)", "DRAM written (MB)"}, ColPredicted: {"predicted (MB)", "DRAM ÷ predicted"},
		ColSectors: {"sectors/load"}, ColL1: {"L1 hit (%)"}, ColL2: {"L2 hit (%)"}, ColDRAMBusy: {"DRAM busy (%)"},
		ColConflicts: {"bank conflicts"}, ColSMBusy: {"SM busy (%)"}, ColInstructions: {"instructions (M)"},
		ColOccupancy: {"occupancy (%)"}, ColLimiter: {"limited by"}, ColTensor: {"tensor pipe (%)"}, ColStalls: {"top stalls (warps per issue)"},
	}
	for _, c := range columns {
		for _, h := range heads[c] {
			t.Headers = append(t.Headers, h)
			t.Right = append(t.Right, c != ColLimiter && c != ColStalls)
		}
	}
	seen := map[string]bool{}
	for _, r := range rs {
		row := []string{r.Variant}
		if len(sizes) > 1 {
			row = append(row, r.Size)
		}
		if r.Outcome != "" || len(r.Kernels) == 0 {
			if many {
				row = append(row, "")
			}
			why := cmp.Or(r.Outcome, "not profiled")
			if r.Detail != "" && r.Outcome != "" {
				why += ": " + firstLine(r.Detail)
			}
			for len(row) < len(t.Headers)-1 {
				row = append(row, "")
			}
			t.add(append(row, why)...)
			continue
		}
		c := countersOf(r)
		if many {
			row = append(row, fmt.Sprint(c.n))
		}
		for _, col := range columns {
			row = append(row, c.cells(col, p, r.Variant, Size(r.Dims), seen)...)
		}
		t.add(row...)
	}
	t.Notes = append(t.Notes, profileNotes(rs, columns, seen)...)
	return t
}

// kernelNames says which kernels each of rs ran, where that is not the
// kernel of its own name: a library's, or more than one.
func kernelNames(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if len(r.Kernels) == 0 || len(r.Kernels) == 1 && r.Kernels[0].Name == strings.TrimSuffix(r.Variant, yours) {
			continue
		}
		var ks []string
		for _, k := range r.Kernels {
			ks = append(ks, k.Name)
		}
		line := fmt.Sprintf("%s ran %s.", r.Variant, strings.Join(ks, ", "))
		if !slices.Contains(out, line) { // the same at every size
			out = append(out, line)
		}
	}
	return out
}

// cells are counters c's cells of column col; seen collects the stall
// reasons shown, for the notes.
func (c counters) cells(col string, p *Problem, variant string, s Size, seen map[string]bool) []string {
	num := func(v float64, ok bool, format string) string {
		if !ok {
			return "–"
		}
		return fmt.Sprintf(format, v)
	}
	sum := func(name string) (float64, bool) {
		v, ok := c.sum[name]
		return v, ok
	}
	switch col {
	case ColTime:
		v, ok := sum(profiler.Duration)
		return []string{num(v/1e3, ok, "%.1f")}
	case ColDRAM:
		rd, ok1 := sum(profiler.DRAMRead)
		wr, ok2 := sum(profiler.DRAMWrite)
		return []string{num(rd/1e6, ok1, "%.1f"), num(wr/1e6, ok2, "%.1f")}
	case ColPredicted:
		want := predictedBytes(p, variant, s)
		rd, ok1 := sum(profiler.DRAMRead)
		wr, ok2 := sum(profiler.DRAMWrite)
		if want <= 0 {
			return []string{"–", "–"}
		}
		return []string{fmt.Sprintf("%.1f", want/1e6), num((rd+wr)/want, ok1 && ok2, "%.2f×")}
	case ColSectors:
		sec, ok1 := sum(profiler.LoadSectors)
		req, ok2 := sum(profiler.LoadRequests)
		return []string{num(sec/req, ok1 && ok2 && req > 0, "%.1f")}
	case ColL1:
		v, ok := c.rate(profiler.L1Hit)
		return []string{num(v, ok, "%.1f")}
	case ColL2:
		v, ok := c.rate(profiler.L2Hit)
		return []string{num(v, ok, "%.1f")}
	case ColDRAMBusy:
		v, ok := c.rate(profiler.DRAMBusy)
		return []string{num(v, ok, "%.1f")}
	case ColConflicts:
		ld, ok1 := sum(profiler.ConflictsLoad)
		st, ok2 := sum(profiler.ConflictsStore)
		return []string{num(ld+st, ok1 || ok2, "%.0f")}
	case ColSMBusy:
		v, ok := c.rate(profiler.SMBusy)
		return []string{num(v, ok, "%.1f")}
	case ColInstructions:
		v, ok := sum(profiler.Instructions)
		return []string{num(v/1e6, ok, "%.1f")}
	case ColOccupancy:
		got, ok1 := c.rate(profiler.Occupancy)
		most, ok2 := c.rate(profiler.MaxOccupancy)
		if !ok1 || !ok2 {
			return []string{"–"}
		}
		return []string{fmt.Sprintf("%.0f / %.0f", got, most)}
	case ColLimiter:
		return []string{c.limiter()}
	case ColTensor:
		v, ok := c.rate(profiler.TensorBusy)
		return []string{num(v, ok, "%.1f")}
	case ColStalls:
		st := c.stalls()
		var parts []string
		for i := 0; i < len(st) && i < 2; i++ {
			parts = append(parts, fmt.Sprintf("%s %.1f", st[i].reason, st[i].warps))
			seen[st[i].reason] = true
		}
		if len(parts) == 0 {
			return []string{"–"}
		}
		return []string{strings.Join(parts, ", ")}
	}
	return nil
}

// clockNote says how the profile of rs was taken: at which clocks, with
// the caches flushed; "" where rs holds no kernel.
func clockNote(rs []Result) string {
	var sm, mem []float64
	for _, r := range rs {
		for _, k := range r.Kernels {
			if v, ok := k.Get(profiler.SMClock); ok {
				sm = append(sm, v/1e6)
			}
			if v, ok := k.Get(profiler.MemClock); ok {
				mem = append(mem, v/1e6)
			}
		}
	}
	if len(sm) == 0 || len(mem) == 0 {
		return ""
	}
	return fmt.Sprintf("Clocks locked at base by Nsight Compute (SM %s MHz, memory %s MHz, as each kernel read them), caches flushed before each kernel: "+
		"its times are taken at these clocks, not the benchmarks', and compare within a table only.", span(sm), span(mem))
}

// span writes the range of vs, "1438" or "1438–1605", to the MHz.
func span(vs []float64) string {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if fmt.Sprintf("%.0f", lo) == fmt.Sprintf("%.0f", hi) {
		return fmt.Sprintf("%.0f", lo)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// profileNotes say how to read the columns shown.
func profileNotes(rs []Result, columns []string, seen map[string]bool) []string {
	var notes []string
	if slices.Contains(columns, ColPredicted) {
		notes = append(notes, "predicted: the bytes the lesson's model says the code must move; DRAM ÷ predicted above 1 is traffic the model did not count.")
	}
	if slices.Contains(columns, ColSectors) {
		notes = append(notes, "sectors/load: 32-byte sectors each warp's global load touched: 4 for 32 contiguous floats (16 for float4s), 32 where each float sat in a sector of its own.")
	}
	if slices.Contains(columns, ColStalls) && len(seen) > 0 {
		var reasons []string
		for r := range seen {
			reasons = append(reasons, r)
		}
		slices.Sort(reasons)
		var parts []string
		for _, r := range reasons {
			parts = append(parts, fmt.Sprintf("%s = waiting for %s", r, cmp.Or(stallMeanings[r], "(see Nsight Compute's warp states)")))
		}
		notes = append(notes, "stalls: warps waiting per instruction issued; "+strings.Join(parts, "; ")+".")
	}
	return notes
}
