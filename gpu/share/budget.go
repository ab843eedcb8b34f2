package share

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// MemLimitEnv names the variable that gives each worker a device-memory
// budget, such as "8GiB": what a learner's worker may allocate on a GPU
// that a class shares. Unset, empty, "0" or "off": no budget.
const MemLimitEnv = "CUDAREPL_MEM_LIMIT"

// Budget is a process's device-memory limit. Within it, the device looks
// smaller: its memory is the budget, and what is left of it is free
// (where the device itself has less free, that), so that a lesson refuses
// a size over the budget before it allocates, as it does a size over the
// device's free memory; an allocation past it is refused before it
// reaches the driver.
//
// What counts is what the process allocates through its context (buffers,
// library workspaces), not what the driver keeps for the context itself
// nor the harness's L2 flush buffer: those are the same for every learner,
// and a sweep that draws the memory a size takes must not see them.
type Budget struct {
	Limit   int64  // bytes; 0 for none
	Setting string // the variable's value as written, for messages
}

// ParseSize reads a size of memory: a number of bytes, or a number (which
// may have a fraction) followed by K, M, G or T, with or without "i" and
// "B" after it and in either case; every unit is a power of 1024, as GPU
// memory is counted, so "8G", "8GB" and "8GiB" are all 8 GiB.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	unit := strings.ToLower(strings.TrimSpace(t[len(num):]))
	num = strings.TrimSpace(num)
	scale := map[string]float64{"": 1, "b": 1}
	for i, p := range []string{"k", "m", "g", "t"} {
		f := math.Pow(1024, float64(i+1))
		scale[p], scale[p+"b"], scale[p+"i"], scale[p+"ib"] = f, f, f, f
	}
	f, ok := scale[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*f >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size of memory: write it as 8GiB, 512MiB, 1.5GiB or a number of bytes", s)
	}
	return int64(v * f), nil
}

// ParseBudget returns the budget that setting, a value of MemLimitEnv,
// sets.
func ParseBudget(setting string) (Budget, error) {
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "", "0", "off", "none":
		return Budget{}, nil
	}
	n, err := ParseSize(setting)
	if err != nil {
		return Budget{}, fmt.Errorf("gpu: %s=%s: %w", MemLimitEnv, setting, err)
	}
	if n == 0 {
		return Budget{}, nil
	}
	return Budget{Limit: n, Setting: setting}, nil
}

// MemLimit returns the device-memory budget that CUDAREPL_MEM_LIMIT sets in
// this process's environment, in bytes; 0 where none is set, and an error
// that names the value where it is not a size.
func MemLimit() (int64, error) {
	b, err := ParseBudget(os.Getenv(MemLimitEnv))
	return b.Limit, err
}

// View returns the free and total memory of a device whose own are free
// and total, as a process under b that has used bytes allocated sees them.
func (b Budget) View(free, total, used int64) (int64, int64) {
	if b.Limit == 0 {
		return free, total
	}
	return max(0, min(free, b.Limit-used)), min(total, b.Limit)
}

// Fits reports whether bytes more fit in b for a process that has used
// bytes allocated.
func (b Budget) Fits(bytes, used int64) bool { return b.Limit == 0 || used+bytes <= b.Limit }
