// Package profiler runs the GPU worker under NVIDIA Nsight Compute (ncu)
// and reads back its hardware counters, one Kernel per kernel launch.
//
// Nsight Compute cannot see a kernel that runs in a worker when it is
// wrapped around the program that starts the worker. So Wrapper gives a
// gpu.Wrapper that starts each worker process under ncu itself, recording
// only between cuProfilerStart and cuProfilerStop (what a gpu.Profile
// request opens around its ops), and Report parses ncu's log.
//
//	w, _ := profiler.Wrapper()
//	dev, _ := gpu.Open(gpu.Options{Wrap: w})
//	dev.Call(gpu.Profile{Mark: 0, Ops: ops})
//	sets, _ := profiler.Report(dev)
package profiler

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cudarepl/gpu"
	"cudarepl/internal/dl"
)

// The counters a profile collects for each kernel, by their Nsight Compute
// names. Each is what one column of a profile table reads.
const (
	Duration       = "gpu__time_duration.sum"                                         // ns
	DRAMRead       = "dram__bytes_read.sum"                                           // bytes
	DRAMWrite      = "dram__bytes_write.sum"                                          // bytes
	L1Hit          = "l1tex__t_sector_hit_rate.pct"                                   // % of L1 sectors requested that hit
	L2Hit          = "lts__t_sector_hit_rate.pct"                                     // % of L2 sectors requested that hit
	Occupancy      = "sm__warps_active.avg.pct_of_peak_sustained_active"              // achieved, % of the SM's warps
	MaxOccupancy   = "sm__maximum_warps_per_active_cycle_pct"                         // theoretical, % of the SM's warps
	SMBusy         = "sm__throughput.avg.pct_of_peak_sustained_elapsed"               // % of the SMs' peak (busiest unit)
	DRAMBusy       = "dram__throughput.avg.pct_of_peak_sustained_elapsed"             // % of DRAM's peak
	ConflictsLoad  = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"       // shared-memory bank conflicts, loads
	ConflictsStore = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"       // shared-memory bank conflicts, stores
	Instructions   = "smsp__inst_executed.sum"                                        // warp instructions executed
	TensorBusy     = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active" // % of cycles the tensor pipe was busy
	LoadSectors    = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"                 // 32-byte sectors global loads asked L1 for
	LoadRequests   = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"                // global load instructions (a warp's each)
	SMClock        = "gpc__cycles_elapsed.avg.per_second"                             // Hz
	MemClock       = "dram__cycles_elapsed.avg.per_second"                            // Hz
	Registers      = "launch__registers_per_thread"
	SharedPerBlock = "launch__shared_mem_per_block" // bytes, static and dynamic
	BlockThreads   = "launch__block_size"
	GridBlocks     = "launch__grid_size"
)

// LimitPrefix begins the name of each occupancy limit, and Limits end
// them: the blocks per SM that registers, shared memory, the threads per
// block and the blocks-per-SM limit each allow.
const LimitPrefix = "launch__occupancy_limit_"

// Limits are the occupancy limits a profile collects (after LimitPrefix).
func Limits() []string { return []string{"registers", "shared_mem", "warps", "blocks"} }

// StallPrefix and StallSuffix enclose each warp-stall reason's name: the
// warps stalled for it per instruction issued.
const (
	StallPrefix = "smsp__average_warps_issue_stalled_"
	StallSuffix = "_per_issue_active.ratio"
)

// metrics is the --metrics list: the counters above, and every occupancy
// limit and stall reason this GPU has (stalls by pattern, since the
// reasons differ between architectures: Hopper's wgmma has its own).
func metrics() string { return strings.Join(named(), ",") }

// named lists the counters asked for by name, and the stalls' pattern.
func named() []string {
	m := []string{Duration, DRAMRead, DRAMWrite, L1Hit, L2Hit, Occupancy, MaxOccupancy, SMBusy, DRAMBusy,
		ConflictsLoad, ConflictsStore, Instructions, TensorBusy, LoadSectors, LoadRequests, SMClock, MemClock,
		Registers, SharedPerBlock}
	for _, l := range Limits() {
		m = append(m, LimitPrefix+l)
	}
	// ncu takes no anchors in a metric's pattern.
	return append(m, "regex:"+StallPrefix+".*"+strings.ReplaceAll(StallSuffix, ".", `\.`))
}

// kept reports whether a column of ncu's table is one of the counters
// asked for: the table also holds the device's attributes, every launch
// statistic and each counter's other roll-ups (.min, .max, .avg).
func kept(name string) bool {
	if strings.HasPrefix(name, StallPrefix) && strings.HasSuffix(name, StallSuffix) {
		return true
	}
	return slices.Contains(named(), name)
}

// ClockControl is what ncu does to the clocks while it measures: it locks
// them at the GPU's base clock, so that counters repeat from run to run.
// Durations in a profile are therefore longer than the course's timings,
// taken at whatever clock the GPU runs.
const ClockControl = "base"

// Wrapper returns what starts each worker process under Nsight Compute,
// for gpu.Options.Wrap, or an error saying what to install.
func Wrapper() (*gpu.Wrapper, error) {
	if r, err := gpu.DefaultRemote(); err == nil && r != nil {
		// The worker runs on a GPU host, which finds ncu there
		// (dl.Tool): this machine need not have it.
		return wrapper("ncu"), nil
	}
	ncu, err := find()
	if err != nil {
		return nil, err
	}
	return wrapper(ncu), nil
}

func wrapper(ncu string) *gpu.Wrapper {
	args := []string{ncu,
		"--profile-from-start", "off",
		"--target-processes", "application-only",
		"--clock-control", ClockControl,
		"--cache-control", "all",
		"--csv", "--page", "raw", "--print-units", "base",
		"--log-file", gpu.LogDir + "/ncu." + gpu.LogStart + ".log", // one a worker process
		"--metrics", metrics()}
	// Each kernel is replayed once per pass of counters, tens of passes.
	return &gpu.Wrapper{Name: "Nsight Compute", Argv: args, Slowdown: 20}
}

// Missing is the sentence said where ncu is not installed.
const Missing = "Nsight Compute (ncu) is not installed: it comes with the CUDA toolkit, or as the nsight-compute package (https://developer.nvidia.com/nsight-compute); put ncu on PATH"

// find returns the path of ncu: on PATH, in $CUDA_PATH/bin or
// $CUDA_HOME/bin, in /usr/local/cuda/bin, or in /opt/nvidia/nsight-compute.
func find() (string, error) {
	if dl.Hidden("ncu") {
		return "", fmt.Errorf("%s (ncu is hidden by %s=%s)", Missing, dl.HideEnv, os.Getenv(dl.HideEnv))
	}
	more, _ := filepath.Glob("/opt/nvidia/nsight-compute/*")
	sort.Sort(sort.Reverse(sort.StringSlice(more))) // newest first
	if p, ok := dl.Tool("ncu", more...); ok {
		return p, nil
	}
	return "", errors.New(Missing)
}

// Kernel is one kernel launch as Nsight Compute measured it.
type Kernel struct {
	Name    string             `json:"name"`  // the function's name, without parameters
	Grid    string             `json:"grid"`  // blocks, e.g. "(16384, 1, 1)"
	Block   string             `json:"block"` // threads per block, e.g. "(256, 1, 1)"
	Metrics map[string]float64 `json:"metrics"`
}

// Get returns the counter called name, and whether the profile has it.
func (k Kernel) Get(name string) (float64, bool) {
	v, ok := k.Metrics[name]
	return v, ok
}

// Report stops w's worker, so that Nsight Compute finishes writing, and
// returns the kernels it profiled, grouped by the gpu.Profile they ran in:
// sets[i] holds the kernels of the Profile with Mark i (nil where none ran
// or it launched none). A worker started again after a fault wrote a log
// of its own; the sets of every log are merged.
func Report(w *gpu.Worker) (sets [][]Kernel, err error) {
	logs, err := w.WrapperLogs()
	if err != nil {
		return nil, err
	}
	return merge(logs)
}

// merge parses each log and merges their sets by mark.
func merge(logs []string) (sets [][]Kernel, err error) {
	var errs []error
	for _, log := range logs {
		got, err := Parse(log)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for len(sets) < len(got) {
			sets = append(sets, nil)
		}
		for i, ks := range got {
			sets[i] = append(sets[i], ks...)
		}
	}
	if sets == nil {
		if len(errs) == 0 {
			return nil, errors.New("profiler: Nsight Compute wrote no log")
		}
		return nil, errors.Join(errs...)
	}
	return sets, nil
}

// Parse reads ncu's --csv --page raw --print-units base log: a header row
// of metric names, a row of units, a row per kernel; other lines (ncu's own
// "==PROF==" messages, the program's output) are skipped. Kernels are
// grouped by the ProfileMarker launched before them.
func Parse(log string) ([][]Kernel, error) {
	var csvLines []string
	var other []string
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, `"`) {
			csvLines = append(csvLines, line)
		} else if s := strings.TrimSpace(line); s != "" {
			other = append(other, s)
		}
	}
	if len(csvLines) == 0 {
		return nil, fmt.Errorf("profiler: Nsight Compute profiled no kernel%s", said(other))
	}
	rows, err := csv.NewReader(strings.NewReader(strings.Join(csvLines, "\n"))).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("profiler: ncu's table: %w", err)
	}
	header := rows[0]
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"ID", "Kernel Name", "Grid Size", "Block Size"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("profiler: ncu's table has no %q column (it has %d columns, beginning %q)", need, len(header), header[0])
		}
	}
	keep := make([]bool, len(header))
	for i, h := range header {
		keep[i] = kept(h)
	}
	var sets [][]Kernel
	mark := -1
	for _, row := range rows[1:] {
		if len(row) != len(header) || row[col["ID"]] == "" {
			continue // the units row
		}
		k := Kernel{Name: baseName(row[col["Kernel Name"]]), Grid: row[col["Grid Size"]], Block: row[col["Block Size"]],
			Metrics: map[string]float64{}}
		if k.Name == gpu.ProfileMarker {
			n, err := firstDim(k.Grid)
			if err != nil {
				return nil, fmt.Errorf("profiler: the marker's grid %q: %w", k.Grid, err)
			}
			mark = n - 1
			for len(sets) <= mark {
				sets = append(sets, nil)
			}
			continue
		}
		if mark < 0 {
			return nil, fmt.Errorf("profiler: kernel %s ran before any marker", k.Name)
		}
		for i, v := range row {
			if f, ok := number(v); ok && keep[i] {
				k.Metrics[header[i]] = f
			}
		}
		sets[mark] = append(sets[mark], k)
	}
	if sets == nil {
		return nil, fmt.Errorf("profiler: Nsight Compute profiled no marked kernel%s", said(other))
	}
	return sets, nil
}

// said is what ncu wrote that was not its table, for an error: its errors
// where it wrote any, else its last lines.
func said(lines []string) string {
	var errs []string
	for _, l := range lines {
		if strings.HasPrefix(l, "==ERROR==") {
			errs = append(errs, l)
		}
	}
	if len(errs) > 0 {
		lines = errs
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	return "; it said: " + strings.Join(lines, " / ")
}

// baseName is a kernel's name without its parameters or return type:
// "vadd(const float *, …)" → "vadd", "void flash<128>(Params)" →
// "flash<128>".
func baseName(s string) string {
	if i := strings.IndexByte(s, '('); i > 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(s, "void ")
	return strings.TrimSpace(s)
}

// firstDim reads the x of "(12, 1, 1)".
func firstDim(s string) (int, error) {
	s = strings.TrimPrefix(s, "(")
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	return strconv.Atoi(strings.TrimSpace(s))
}

// number reads a value ncu printed, with its thousands separators.
func number(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return f, err == nil
}
