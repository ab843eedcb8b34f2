package gpu

import (
	"fmt"
	"os"
	"sync"

	"cudarepl/gpu/share"
)

// processBudget is this process's device-memory budget (share.Budget),
// read from the environment on first use: a worker inherits the variable
// from the program that starts it (the REPL, a notebook's kernel, which
// JupyterHub's spawner gives it).
var processBudget = sync.OnceValues(func() (share.Budget, error) { return share.ParseBudget(os.Getenv(share.MemLimitEnv)) })

// admit returns a *BudgetError where bytes more, for what, would take a
// process that has used bytes allocated past b.
func admit(b share.Budget, what string, bytes, used int64) error {
	if b.Fits(bytes, used) {
		return nil
	}
	return &BudgetError{What: what, Need: bytes, InUse: used, Limit: b.Limit, Setting: b.Setting}
}

// BudgetError is an allocation refused before it was made, because it
// would take the worker past its device-memory budget (share.MemLimitEnv).
// It unwraps to CUDA_ERROR_OUT_OF_MEMORY, so IsOutOfMemory reports it as
// the device running out: a sweep marks the size out of memory and goes
// on.
type BudgetError struct {
	What    string // what was being allocated, e.g. "alloc", "cuBLAS workspace"
	Need    int64  // bytes asked for
	InUse   int64  // bytes of the budget already allocated
	Limit   int64  // the budget, in bytes
	Setting string // the budget as written in share.MemLimitEnv, e.g. "8GiB"
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("gpu: %s of %s is over this worker's device-memory budget: %s of its %s (%s=%s) is free; take a smaller size, or free memory first",
		e.What, fmtBytes(e.Need), fmtBytes(max(0, e.Limit-e.InUse)), fmtBytes(e.Limit), share.MemLimitEnv, e.Setting)
}

// Unwrap returns the CUDA error the driver would have given.
func (e *BudgetError) Unwrap() error {
	return &CUDAError{Call: "cuMemAlloc_v2", Detail: e.What, Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "over the device-memory budget " + share.MemLimitEnv + "=" + e.Setting}
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
	return admit(b, what, bytes, c.allocated())
}
