package gpu

import "testing"

func TestFeatureArch(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		nvrtc, want  string
	}{
		{9, 0, "13.0", "sm_90a"},
		{9, 0, "12.0", "sm_90a"},
		{9, 0, "11.8", "sm_90"},
		{9, 0, "", "sm_90"},
		{8, 9, "13.0", "sm_89"},
		{10, 0, "13.0", "sm_100"},
	} {
		d := DeviceInfo{Major: tc.major, Minor: tc.minor}
		if got := d.FeatureArch(tc.nvrtc); got != tc.want {
			t.Errorf("compute %d.%d, NVRTC %q: FeatureArch = %s, want %s", tc.major, tc.minor, tc.nvrtc, got, tc.want)
		}
	}
}
