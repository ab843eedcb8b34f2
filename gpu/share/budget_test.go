package share

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"512B", 512, false},
		{"1KiB", 1 << 10, false},
		{"8GiB", 8 << 30, false},
		{"8G", 8 << 30, false},
		{"8GB", 8 << 30, false},
		{"8gi", 8 << 30, false},
		{" 8 GiB ", 8 << 30, false},
		{"1.5GiB", 3 << 29, false},
		{"512MiB", 512 << 20, false},
		{"2TiB", 2 << 40, false},
		{"", 0, true},
		{"GiB", 0, true},
		{"8 gigs", 0, true},
		{"-1GiB", 0, true},
		{"8PiB", 0, true},
		{"1e30", 0, true},
		{"NaN", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "write it as 8GiB") {
			t.Errorf("ParseSize(%q) error %q does not say how to write a size", tt.in, err)
		}
	}
}

func TestParseBudget(t *testing.T) {
	tests := []struct {
		setting string
		want    Budget
		wantErr string
	}{
		{"", Budget{}, ""},
		{"off", Budget{}, ""},
		{"0", Budget{}, ""},
		{"0GiB", Budget{}, ""},
		{"8GiB", Budget{Limit: 8 << 30, Setting: "8GiB"}, ""},
		{"8 gigs", Budget{}, `gpu: CUDAREPL_MEM_LIMIT=8 gigs: "8 gigs" is not a size of memory: write it as 8GiB, 512MiB, 1.5GiB or a number of bytes`},
	}
	for _, tt := range tests {
		got, err := ParseBudget(tt.setting)
		if got != tt.want || errText(err) != tt.wantErr {
			t.Errorf("ParseBudget(%q) = %+v, %q; want %+v, %q", tt.setting, got, errText(err), tt.want, tt.wantErr)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestMemLimit(t *testing.T) {
	t.Setenv(MemLimitEnv, "2KiB")
	if n, err := MemLimit(); n != 2048 || err != nil {
		t.Errorf("MemLimit() under %s=2KiB = %d, %v; want 2048, nil", MemLimitEnv, n, err)
	}
	t.Setenv(MemLimitEnv, "")
	if n, err := MemLimit(); n != 0 || err != nil {
		t.Errorf("MemLimit() without a budget = %d, %v; want 0, nil", n, err)
	}
}

func TestBudget(t *testing.T) {
	const gib = 1 << 30
	eight := Budget{Limit: 8 * gib, Setting: "8GiB"}
	tests := []struct {
		desc                string
		b                   Budget
		free, total, used   int64
		wantFree, wantTotal int64
		ask                 int64
		wantFits            bool
	}{
		{"no budget: the device as it is", Budget{}, 70 * gib, 80 * gib, 0, 70 * gib, 80 * gib, 75 * gib, true},
		{"the budget looks like the device", eight, 70 * gib, 80 * gib, 0, 8 * gib, 8 * gib, 8 * gib, true},
		{"what is in use is not free", eight, 70 * gib, 80 * gib, 3 * gib, 5 * gib, 8 * gib, 5 * gib, true},
		{"over by a byte", eight, 70 * gib, 80 * gib, 3 * gib, 5 * gib, 8 * gib, 5*gib + 1, false},
		{"the device has less free than the budget", eight, 2 * gib, 80 * gib, 1 * gib, 2 * gib, 8 * gib, 12 * gib, false},
		{"a small device", eight, 3 * gib, 4 * gib, 0, 3 * gib, 4 * gib, 1, true},
		{"more in use than the budget (a workspace let past it)", eight, 70 * gib, 80 * gib, 9 * gib, 0, 8 * gib, 1, false},
	}
	for _, tt := range tests {
		free, total := tt.b.View(tt.free, tt.total, tt.used)
		if free != tt.wantFree || total != tt.wantTotal {
			t.Errorf("%s: View(%d, %d, %d) = %d, %d; want %d, %d", tt.desc, tt.free, tt.total, tt.used, free, total, tt.wantFree, tt.wantTotal)
		}
		if got := tt.b.Fits(tt.ask, tt.used); got != tt.wantFits {
			t.Errorf("%s: Fits(%d, %d) = %v; want %v", tt.desc, tt.ask, tt.used, got, tt.wantFits)
		}
	}
}
