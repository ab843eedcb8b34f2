package nvml

import (
	"errors"
	"strings"
	"testing"

	"cudarepl/internal/dl"
)

func TestReasons(t *testing.T) {
	tests := []struct {
		r    Reasons
		want string
	}{
		{0, "none"},
		{0x4, "power cap"},
		{0x1 | 0x40, "idle, hardware thermal slowdown"},
		{0x4 | 0x1000, "power cap, reason 0x1000"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Reasons(%#x) = %q, want %q", uint64(tt.r), got, tt.want)
		}
	}
}

// TestOpenNoSuchGPU: a GPU that is not there fails with one sentence:
// NVML is not found (a machine without the driver), or it has no GPU at
// that address.
func TestOpenNoSuchGPU(t *testing.T) {
	_, err := Open("ffff:ff:1f.0")
	var ue *dl.UnavailableError
	switch {
	case err == nil:
		t.Fatal("Open(a bus with no GPU) succeeded")
	case errors.As(err, &ue):
		if !strings.Contains(err.Error(), "NVML not found") {
			t.Errorf("Open without NVML = %v, want it to say NVML is not found", err)
		}
	case !strings.Contains(err.Error(), "ffff:ff:1f.0"):
		t.Errorf("Open(ffff:ff:1f.0) = %v, want the address named", err)
	}
}
