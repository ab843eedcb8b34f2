package gpu

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
)

// MemLimitEnv names the variable that gives each worker a device-memory
// budget, such as "8GiB": what a learner's worker may allocate on a GPU
// that a class shares. Unset, empty, "0" or "off": no budget.
const MemLimitEnv = "CUDAREPL_MEM_LIMIT"

// memBudget is a process's device-memory limit. Within it, the device
// looks smaller: MemInfo reports the budget as the total and what is left
// of it as free (where the device itself has less free, that), so that
// a lesson refuses a size over the budget before it allocates, as it does
// a size over the device's free memory; an allocation past it is refused
// with a *BudgetError before it reaches the driver.
//
// What counts is what the process allocates through the Context (buffers,
// library workspaces), not what the driver keeps for the context itself
// nor the harness's L2 flush buffer: those are the same for every learner,
// and a sweep that draws the memory a size takes must not see them.
type memBudget struct {
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

// budgetFrom is the budget that setting, a value of MemLimitEnv, sets.
func budgetFrom(setting string) (memBudget, error) {
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "", "0", "off", "none":
		return memBudget{}, nil
	}
	n, err := ParseSize(setting)
	if err != nil {
		return memBudget{}, fmt.Errorf("gpu: %s=%s: %w", MemLimitEnv, setting, err)
	}
	if n == 0 {
		return memBudget{}, nil
	}
	return memBudget{Limit: n, Setting: setting}, nil
}

// processBudget is this process's budget, read from the environment on
// first use: a worker inherits the variable from the program that starts
// it (the REPL, a notebook's kernel, which JupyterHub's spawner gives it).
var processBudget = sync.OnceValues(func() (memBudget, error) { return budgetFrom(os.Getenv(MemLimitEnv)) })

// MemLimit returns the device-memory budget that CUDAREPL_MEM_LIMIT sets in
// this process's environment, in bytes; 0 where none is set, and an error
// that names the value where it is not a size.
func MemLimit() (int64, error) {
	b, err := processBudget()
	return b.Limit, err
}

// view returns the free and total memory of a device whose own are free and
// total, as a process under b that has used bytes allocated sees them.
func (b memBudget) view(free, total, used int64) (int64, int64) {
	if b.Limit == 0 {
		return free, total
	}
	return max(0, min(free, b.Limit-used)), min(total, b.Limit)
}

// admit returns a *BudgetError where bytes more, for what, would take a
// process that has used bytes allocated past b.
func (b memBudget) admit(what string, bytes, used int64) error {
	if b.Limit == 0 || used+bytes <= b.Limit {
		return nil
	}
	return &BudgetError{What: what, Need: bytes, InUse: used, Limit: b.Limit, Setting: b.Setting}
}

// BudgetError is an allocation refused before it was made, because it
// would take the worker past its device-memory budget (MemLimitEnv). It
// unwraps to CUDA_ERROR_OUT_OF_MEMORY, so IsOutOfMemory reports it as the
// device running out: a sweep marks the size out of memory and goes on.
type BudgetError struct {
	What    string // what was being allocated, e.g. "alloc", "cuBLAS workspace"
	Need    int64  // bytes asked for
	InUse   int64  // bytes of the budget already allocated
	Limit   int64  // the budget, in bytes
	Setting string // the budget as written in MemLimitEnv, e.g. "8GiB"
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("gpu: %s of %s is over this worker's device-memory budget: %s of its %s (%s=%s) is free; take a smaller size, or free memory first",
		e.What, fmtBytes(e.Need), fmtBytes(max(0, e.Limit-e.InUse)), fmtBytes(e.Limit), MemLimitEnv, e.Setting)
}

// Unwrap returns the CUDA error the driver would have given.
func (e *BudgetError) Unwrap() error {
	return &CUDAError{Call: "cuMemAlloc_v2", Detail: e.What, Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "over the device-memory budget " + MemLimitEnv + "=" + e.Setting}
}

// fmtBytes writes a byte count in GiB with one decimal, or in MiB below
// 1 GiB, KiB below 1 MiB, bytes below 1 KiB.
func fmtBytes(b int64) string {
	switch {
	case b < 1<<10:
		return fmt.Sprintf("%d bytes", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	case b < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// allocated is the device memory this context has allocated and not yet
// freed, which counts against its budget; on the GPU thread.
func (c *Context) allocated() int64 {
	var n int64
	for _, b := range c.allocs {
		n += b
	}
	return n
}

// admit returns an error where bytes more of device memory, for what,
// would take this process past its budget, or where the budget's setting
// is not a size; on the GPU thread, before the memory is allocated.
func (c *Context) admit(bytes int64, what string) error {
	b, err := processBudget()
	if err != nil {
		return err
	}
	return b.admit(what, bytes, c.allocated())
}
