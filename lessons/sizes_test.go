package lessons

import (
	"strings"
	"testing"
)

// TestParseSizesErrors: a size that cannot be read says why in words a
// learner can act on: too large, not a power, not a number.
func TestParseSizesErrors(t *testing.T) {
	tests := []struct {
		arg, want string
	}{
		{"2^99", `size "2^99": too large: a size's numbers go up to 2^40`},
		{"2^41", "too large"},
		{"3^40", "too large"}, // past int64 if multiplied out
		{"99999999999999999999", "too large"},
		{"2^40G", "too large"},
		{"1000x2^y", `size "1000x2^y": 2^y: not a power like 2^20`},
		{"2^y", `size "2^y": not a power like 2^20`},
		{"0", `size "0": not a positive whole number`},
		{"-4", "not a positive whole number"},
		{"x", `size "x": no number`},
	}
	for _, tt := range tests {
		_, err := ParseSizes([]string{tt.arg})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSizes(%q) = %v, want %q", tt.arg, err, tt.want)
		}
	}
	for _, ok := range []string{"2^40", "1G", "1024G", "1000x1003x517", "64K"} {
		if _, err := ParseSizes([]string{ok}); err != nil {
			t.Errorf("ParseSizes(%q) = %v, want it read", ok, err)
		}
	}
}
