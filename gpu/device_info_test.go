package gpu

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestTwoWaves: an H100's 132 SMs of 2048 threads hold 8 blocks of 256
// each, so two waves are 2112 blocks.
func TestTwoWaves(t *testing.T) {
	d := DeviceInfo{SMs: 132, MaxThreadsPerSM: 2048}
	for block, want := range map[int]int{256: 2112, 1024: 528, 128: 4224} {
		if got := d.TwoWaves(block); got != want {
			t.Errorf("TwoWaves(%d) = %d, want %d", block, got, want)
		}
	}
}

func TestPCIeLink(t *testing.T) {
	dir := t.TempDir()
	for name, v := range map[string]string{"current_link_speed": "2.5 GT/s PCIe\n", "max_link_speed": "32.0 GT/s PCIe\n",
		"current_link_width": "16\n", "max_link_width": "16\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := readPCIeLink(dir)
	if l.Gen() != 5 || math.Abs(l.GBs()-63.015) > 0.01 {
		t.Errorf("Gen5 x16: gen %d, %.3f GB/s; want 5 and 63.015", l.Gen(), l.GBs())
	}
	if got := l.String(); got != "PCIe Gen5 x16 (63.0 GB/s each way), running at 2.5 GT/s x16 now" {
		t.Errorf("String = %q", got)
	}
	for _, tc := range []struct {
		l    PCIeLink
		gen  int
		gbs  float64
		text string
	}{
		{PCIeLink{MaxGTs: 16, MaxWidth: 16, GTs: 16, Width: 16}, 4, 31.508, "PCIe Gen4 x16 (31.5 GB/s each way)"},
		{PCIeLink{MaxGTs: 5, MaxWidth: 8}, 2, 4, "PCIe Gen2 x8 (4.0 GB/s each way)"},
		{PCIeLink{}, 0, 0, "PCIe link not reported"},
	} {
		if tc.l.Gen() != tc.gen || math.Abs(tc.l.GBs()-tc.gbs) > 0.01 || tc.l.String() != tc.text {
			t.Errorf("%+v: gen %d, %.3f GB/s, %q; want %d, %.3f, %q", tc.l, tc.l.Gen(), tc.l.GBs(), tc.l.String(), tc.gen, tc.gbs, tc.text)
		}
	}
	if l := readPCIeLink(filepath.Join(dir, "nope")); l.Known() {
		t.Errorf("a missing folder reads as %+v", l)
	}
}
