package gpu

import "testing"

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
