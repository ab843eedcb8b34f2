package gpu

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"cudarepl/gpu/share"
)

// TestAdmit: an allocation past the budget is refused with a *BudgetError
// that is out of memory and says how much of the budget is free.
func TestAdmit(t *testing.T) {
	const gib = 1 << 30
	eight := share.Budget{Limit: 8 * gib, Setting: "8GiB"}
	tests := []struct {
		desc                   string
		b                      share.Budget
		used, ask              int64
		wantRefused            bool
		wantInMsg1, wantInMsg2 string
	}{
		{"no budget", share.Budget{}, 0, 75 * gib, false, "", ""},
		{"within it", eight, 3 * gib, 5 * gib, false, "", ""},
		{"over by a byte", eight, 3 * gib, 5*gib + 1, true, "5.0 GiB of its 8.0 GiB", "CUDAREPL_MEM_LIMIT=8GiB"},
		{"far over", eight, 1 * gib, 12 * gib, true, "alloc of 12.0 GiB", "7.0 GiB of its 8.0 GiB"},
		{"more in use than the budget (a workspace let past it)", eight, 9 * gib, 1, true, "0 bytes of its 8.0 GiB", ""},
	}
	for _, tt := range tests {
		err := admit(tt.b, "alloc", tt.ask, tt.used)
		if (err != nil) != tt.wantRefused {
			t.Errorf("%s: admit(%d) = %v; want refused %v", tt.desc, tt.ask, err, tt.wantRefused)
			continue
		}
		if err == nil {
			continue
		}
		var be *BudgetError
		if !errors.As(err, &be) || !IsOutOfMemory(err) {
			t.Errorf("%s: admit(%d) = %T %v; want a *BudgetError that IsOutOfMemory", tt.desc, tt.ask, err, err)
		}
		for _, want := range []string{tt.wantInMsg1, tt.wantInMsg2} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: admit(%d) = %q; want it to say %q", tt.desc, tt.ask, err, want)
			}
		}
	}
}

func TestBudgetErrorMessage(t *testing.T) {
	err := error(&BudgetError{What: "alloc", Need: 12 << 30, InUse: 3 << 29, Limit: 8 << 30, Setting: "8GiB"})
	want := "gpu: alloc of 12.0 GiB is over this worker's device-memory budget: 6.5 GiB of its 8.0 GiB (CUDAREPL_MEM_LIMIT=8GiB) is free; take a smaller size, or free memory first"
	if err.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", err, want)
	}
	var ce *CUDAError
	if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_OUT_OF_MEMORY" || ce.Sticky() {
		t.Errorf("BudgetError unwraps to %+v; want a CUDA_ERROR_OUT_OF_MEMORY that is not sticky", ce)
	}
}

// budgetFake is the fake device under this process's budget, as a
// Context is: what it allocates counts against share.MemLimitEnv.
type budgetFake struct{ *fakeDevice }

func (f budgetFake) used() int64 {
	var n int64
	for _, b := range f.mem {
		n += int64(len(b))
	}
	return n
}

func (f budgetFake) MemInfo() (int64, int64, error) {
	b, err := processBudget()
	if err != nil {
		return 0, 0, err
	}
	free, total, _ := f.fakeDevice.MemInfo()
	free, total = b.View(free, total, f.used())
	return free, total, nil
}

func (f budgetFake) Alloc(n int64) (DevicePtr, error) {
	b, err := processBudget()
	if err != nil {
		return 0, err
	}
	if err := admit(b, "alloc", n, f.used()); err != nil {
		return 0, err
	}
	return f.fakeDevice.Alloc(n)
}

var _ = func() bool {
	workerBackends["fake-budget"] = func() (Device, error) {
		return budgetFake{&fakeDevice{mem: map[DevicePtr][]byte{}, host: map[HostPtr][]byte{}, next: 0x10000}}, nil
	}
	return true
}()

// TestWorkerMemLimit runs a worker under a budget of 1 KiB: it reports
// the budget as its memory, refuses past it in one sentence that names
// the budget, as out of memory, and carries on.
func TestWorkerMemLimit(t *testing.T) {
	t.Setenv(share.MemLimitEnv, "1KiB") // the worker inherits it
	w, err := Open(Options{Timeout: 5 * time.Second, backend: "fake-budget", Stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatalf("Open(fake-budget) = %v", err)
	}
	defer w.Close()
	if free, total, err := w.MemInfo(); free != 1024 || total != 1024 || err != nil {
		t.Errorf("MemInfo = %d, %d, %v; want 1024, 1024, nil (the budget)", free, total, err)
	}
	if _, err := w.Alloc(768); err != nil {
		t.Fatalf("Alloc(768) = %v; want it within the budget", err)
	}
	if free, _, _ := w.MemInfo(); free != 256 {
		t.Errorf("MemInfo free after 768 bytes = %d; want 256", free)
	}
	_, err = w.Alloc(512)
	want := "gpu: alloc of 512 bytes is over this worker's device-memory budget: 256 bytes of its 1.0 KiB (CUDAREPL_MEM_LIMIT=1KiB) is free"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !IsOutOfMemory(err) {
		t.Errorf("Alloc(512) = %v;\nwant %q…, out of memory", err, want)
	}
	if w.Restarts() != 0 {
		t.Errorf("the worker was restarted %d times; a refused allocation must leave it as it was", w.Restarts())
	}
	if _, err := w.Alloc(256); err != nil {
		t.Errorf("Alloc(256) = %v; want the rest of the budget", err)
	}
}

func TestWorkerMemLimitBadSetting(t *testing.T) {
	t.Setenv(share.MemLimitEnv, "8 gigs")
	w, err := Open(Options{Timeout: 5 * time.Second, backend: "fake-budget", Stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatalf("Open(fake-budget) = %v", err)
	}
	defer w.Close()
	_, err = w.Alloc(1)
	if want := `CUDAREPL_MEM_LIMIT=8 gigs: "8 gigs" is not a size of memory: write it as 8GiB`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Alloc under %s=8 gigs = %v; want it to say %q", share.MemLimitEnv, err, want)
	}
}
