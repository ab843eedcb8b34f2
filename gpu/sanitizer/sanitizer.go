// Package sanitizer runs the GPU worker under NVIDIA's compute-sanitizer
// and reads back what it finds, one Finding per kind of error and kernel.
//
// compute-sanitizer cannot see a kernel that runs in a worker when it is
// wrapped around the program that starts the worker (it follows the
// program, not its children, by default). So Wrapper gives a gpu.Wrapper
// that starts each worker process under the sanitizer itself, logging to
// the worker's log folder, and Report parses those logs.
//
//	w, _ := sanitizer.Wrapper("memcheck")
//	dev, _ := gpu.Open(gpu.Options{Wrap: w})
//	… run kernels …
//	findings, _ := sanitizer.Report(dev, "memcheck")
package sanitizer

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"cudarepl/gpu"
	"cudarepl/internal/dl"
)

// Tools are the compute-sanitizer tools a worker can run under.
var Tools = []string{"memcheck", "racecheck", "synccheck", "initcheck"}

// Wrapper returns what starts each worker process under compute-sanitizer's
// tool (memcheck, racecheck, synccheck or initcheck), for gpu.Options.Wrap.
// Calls then take ten times the time limit, at least two minutes.
func Wrapper(tool string) (*gpu.Wrapper, error) {
	if r, err := gpu.DefaultRemote(); err == nil && r != nil {
		// The worker runs on a GPU host, which finds the tool there
		// (dl.Tool): this machine need not have it.
		return wrapper("compute-sanitizer", tool)
	}
	san, err := find()
	if err != nil {
		return nil, err
	}
	return wrapper(san, tool)
}

// find returns the path of compute-sanitizer: on PATH, in $CUDA_PATH/bin
// or $CUDA_HOME/bin, or in /usr/local/cuda/bin.
func find() (string, error) {
	if dl.Hidden("sanitizer") {
		return "", fmt.Errorf("gpu: compute-sanitizer is hidden by %s=%s", dl.HideEnv, os.Getenv(dl.HideEnv))
	}
	if p, ok := dl.Tool("compute-sanitizer"); ok {
		return p, nil
	}
	return "", fmt.Errorf("gpu: compute-sanitizer not found (looked on PATH, in $CUDA_PATH/bin and /usr/local/cuda/bin); it comes with the CUDA toolkit")
}

// wrapper starts the worker under the compute-sanitizer at path, running
// tool, logging one file per process.
func wrapper(path, tool string) (*gpu.Wrapper, error) {
	if !slices.Contains(Tools, tool) {
		return nil, fmt.Errorf("gpu: no compute-sanitizer tool %q (there are: %s)", tool, strings.Join(Tools, ", "))
	}
	args := []string{path, "--tool", tool,
		"--log-file", gpu.LogDir + "/worker.%p.log",
		"--print-limit", "200",
		"--show-backtrace", "no",
		"--check-exit-code", "no",
		"--require-cuda-init", "no",
		"--target-processes", "application-only"}
	if tool == "racecheck" {
		args = append(args, "--racecheck-report", "hazard")
	}
	// Kernels run tens of times slower under the sanitizer.
	return &gpu.Wrapper{Name: "compute-sanitizer " + tool, Argv: args, Slowdown: 10}, nil
}

// Finding is one kind of error compute-sanitizer reported in one kernel:
// the first occurrence, and how many there were in all.
type Finding struct {
	Tool    string // memcheck, racecheck, synccheck or initcheck
	What    string // e.g. "Invalid __global__ write of size 4 bytes"
	Kernel  string // e.g. "vadd_exercise"; "" for an error outside any kernel
	Thread  string // e.g. "(232,0,0)"
	Block   string // e.g. "(3,0,0)"
	Address string // e.g. "0x7f43d0800fa0"
	Detail  string // e.g. "1 bytes after the nearest allocation at 0x7f43d0800000 of size 4,000 bytes"
	Count   int
}

func (f Finding) String() string {
	var b strings.Builder
	if f.Kernel != "" {
		b.WriteString(f.Kernel + ": ")
	}
	b.WriteString(f.What)
	var where []string
	if f.Thread != "" {
		where = append(where, "thread "+f.Thread)
	}
	if f.Block != "" {
		where = append(where, "block "+f.Block)
	}
	if f.Address != "" {
		where = append(where, "address "+f.Address)
	}
	if len(where) > 0 {
		b.WriteString(" (" + strings.Join(where, ", ") + ")")
	}
	if f.Detail != "" {
		b.WriteString(": " + f.Detail)
	}
	if f.Count > 1 {
		fmt.Fprintf(&b, "; %d in all", f.Count)
	}
	return b.String()
}

var (
	sanLine     = regexp.MustCompile(`^========= ?(.*)$`)
	sanAt       = regexp.MustCompile(`\bat (?:0x[0-9a-f]+ in )?(?:[^ ]*:\d+:)?([A-Za-z_]\w*)(?:\(|\+)`)
	sanThread   = regexp.MustCompile(`[Tt]hread \(([^)]*)\)`)
	sanBlock    = regexp.MustCompile(`block \(([^)]*)\)`)
	sanAddress  = regexp.MustCompile(`(?:Address|Access to|at __shared__|at __global__) (0x[0-9a-f]+)`)
	sanAllocRel = regexp.MustCompile(`^and is (.*)$`)
	sanHazards  = regexp.MustCompile(`\[(\d+) hazards?\]`)
	// A racecheck hazard: "Warning: (Warp Level Programming) Potential RAW
	// hazard detected at __shared__ 0x404 in block (0,0,0) :", then the two
	// accesses, "Write Thread (1,0,0) at race(float *)+0xa0".
	sanHazard = regexp.MustCompile(`^(?:(Warning|Error): )?(\(Warp Level Programming\) )?Potential (\w+) hazard detected at __shared__ (0x[0-9a-f]+) in block \(([^)]*)\)`)
	sanAccess = regexp.MustCompile(`^(Read|Write|Atomic) Thread \(([^)]*)\) at (.*)$`)
)

// parseSanitizerLog reads compute-sanitizer's text report: records open
// with "========= " and a message, and go on with indented lines. Summaries,
// host backtraces and the API errors a fault leads to are left out, and
// findings of one kind in one kernel are counted as one.
func parseSanitizerLog(tool, log string) []Finding {
	var out []Finding
	index := map[string]int{}
	var cur *Finding
	var hazards int
	flush := func() {
		if cur == nil {
			return
		}
		key := cur.What + "\x00" + cur.Kernel
		n := max(1, hazards)
		if i, ok := index[key]; ok {
			out[i].Count += n
		} else {
			cur.Count = n
			index[key] = len(out)
			out = append(out, *cur)
		}
		cur, hazards = nil, 0
	}
	for _, line := range strings.Split(log, "\n") {
		m := sanLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := m[1]
		indented := strings.HasPrefix(text, "  ")
		text = strings.TrimSpace(text)
		if !indented {
			flush()
			if text == "" || skipSanitizerRecord(text) {
				continue
			}
			what := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(text, "Error: "), "ERROR: "), " :")
			cur = &Finding{Tool: tool, What: what}
			if i := strings.Index(what, " at "); i > 0 && strings.Contains(what, "Race reported") {
				cur.What, cur.Detail = what[:i], "at "+sanOffset(what[i+4:])
			}
			if h := sanHazard.FindStringSubmatch(text); h != nil {
				cur.What = "potential " + h[3] + " hazard on shared memory"
				if h[2] != "" {
					cur.What += " between threads of one warp"
				}
				if h[1] == "Warning" {
					cur.What += " (a warning)"
				}
				cur.Address, cur.Block = h[4], "("+h[5]+")"
				continue
			}
		}
		if cur == nil {
			continue
		}
		if cur.Kernel == "" {
			if k := sanAt.FindStringSubmatch(text); k != nil {
				cur.Kernel = k[1]
			}
		}
		if a := sanAccess.FindStringSubmatch(text); a != nil {
			access := fmt.Sprintf("%s by thread (%s) at %s", strings.ToLower(a[1]), a[2], sanOffset(a[3]))
			if cur.Detail == "" {
				cur.Detail = access
			} else {
				cur.Detail += ", " + access
			}
			continue
		}
		if cur.Thread == "" {
			if t := sanThread.FindStringSubmatch(text); t != nil {
				cur.Thread = "(" + strings.ReplaceAll(t[1], " ", "") + ")"
			}
		}
		if cur.Block == "" {
			if b := sanBlock.FindStringSubmatch(text); b != nil {
				cur.Block = "(" + strings.ReplaceAll(b[1], " ", "") + ")"
			}
		}
		if cur.Address == "" {
			if a := sanAddress.FindStringSubmatch(text); a != nil {
				cur.Address = a[1]
			}
		}
		if r := sanAllocRel.FindStringSubmatch(text); r != nil && cur.Detail == "" {
			cur.Detail = r[1]
		}
		if h := sanHazards.FindStringSubmatch(text); h != nil {
			fmt.Sscan(h[1], &hazards)
		}
		if rest, ok := strings.CutPrefix(text, "and "); ok && strings.Contains(cur.What, "Race reported") {
			kind, at, _ := strings.Cut(strings.TrimSpace(sanHazards.ReplaceAllString(rest, "")), " at ")
			cur.What += " and " + kind
			cur.Detail += " and " + sanOffset(at)
		}
	}
	flush()
	return out
}

// sanOffset shortens "race(float *)+0xa0" to "race+0xa0".
func sanOffset(at string) string {
	if i, j := strings.Index(at, "("), strings.LastIndex(at, ")"); i > 0 && j > i {
		return at[:i] + at[j+1:]
	}
	return at
}

// skipSanitizerRecord reports the records that are not findings.
func skipSanitizerRecord(text string) bool {
	for _, p := range []string{"COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Saved host backtrace",
		"Target application terminated before first instrumented API call", "Host Frame"} {
		if strings.HasPrefix(text, p) || strings.HasPrefix(text, "Error: "+p) {
			return true
		}
	}
	return false
}

// Report stops w's worker, so that compute-sanitizer finishes its report,
// and returns what tool found in every worker process started since the
// last report (a fault ends a worker, and the next one starts under the
// sanitizer too). The next call starts a fresh worker.
func Report(w *gpu.Worker, tool string) ([]Finding, error) {
	logs, err := w.WrapperLogs()
	var out []Finding
	for _, log := range logs {
		out = append(out, parseSanitizerLog(tool, log)...)
	}
	return mergeFindings(out), err
}

// mergeFindings counts findings of one kind in one kernel as one, errors
// before warnings. The failed API calls a kernel's error leads to are left
// out where a kernel's error explains them.
func mergeFindings(fs []Finding) []Finding {
	var out []Finding
	index := map[string]int{}
	inKernel := false
	for _, f := range fs {
		inKernel = inKernel || f.Kernel != ""
		key := f.What + "\x00" + f.Kernel
		if i, ok := index[key]; ok {
			out[i].Count += f.Count
			continue
		}
		index[key] = len(out)
		out = append(out, f)
	}
	kept := out[:0]
	for _, f := range out {
		if !(inKernel && f.Kernel == "" && strings.HasPrefix(f.What, "Program hit")) {
			kept = append(kept, f)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		return !strings.Contains(kept[i].What, "warning") && strings.Contains(kept[j].What, "warning")
	})
	return kept
}
