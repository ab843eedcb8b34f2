package dl

import (
	"strings"
	"testing"
)

// TestCheckHidden: a name $CUDAREPL_HIDE does not know is an error that
// names it and what the known ones are; known names, any case, are not.
func TestCheckHidden(t *testing.T) {
	tests := []struct {
		hide, want string // want "" for no error
	}{
		{"", ""},
		{"nvrtc,jupyter", ""},
		{" NVRTC , driver", ""},
		{"bogus", `CUDAREPL_HIDE=bogus: "bogus" is none of driver, nvrtc, cublas, cudnn, nccl, nvml, sanitizer, ncu, jupyter, so it hides nothing`},
		{"nvrct,nvrtc,jupiter", `"nvrct", "jupiter" are none of`},
	}
	for _, tt := range tests {
		t.Setenv(HideEnv, tt.hide)
		err := CheckHidden()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CUDAREPL_HIDE=%q: %v, want %q", tt.hide, err, tt.want)
		}
	}
}

// TestOpenHidden: a hidden library says it is hidden, and how to unhide
// it, not how to install what may well be installed.
func TestOpenHidden(t *testing.T) {
	t.Setenv(HideEnv, "nvrtc")
	_, err := Open("nvrtc", "NVRTC not found", "install the CUDA toolkit or set CUDA_PATH", "libnvrtc.so.12")
	want := "gpu: NVRTC hidden by CUDAREPL_HIDE=nvrtc (take nvrtc out of it to use NVRTC where it is installed)"
	if err == nil || err.Error() != want {
		t.Errorf("Open of a hidden library = %v, want %q", err, want)
	}
	t.Setenv(HideEnv, "driver")
	if _, err := Open("driver", "no NVIDIA driver found", "", "libcuda.so.1"); err == nil || !strings.Contains(err.Error(), "gpu: NVIDIA driver hidden by") {
		t.Errorf("Open of a hidden driver = %v", err)
	}
}
