package memaccess

import (
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestBlocksPerSM(t *testing.T) {
	h100 := gpu.DeviceInfo{RegsPerSM: 65536, MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32}
	for _, tc := range []struct{ regs, block, want int }{
		{8, 256, 8},   // threads, not registers, limit it
		{32, 256, 8},  // 32 × 256 × 8 = 65536: exactly full
		{33, 256, 6},  // rounded up to 40 a thread
		{48, 256, 5},  // 1536 a warp: 42 warps, 5 blocks of 8
		{255, 256, 1}, // 256 a thread after rounding: one block
		{32, 32, 32},  // small blocks: the 32-block limit
	} {
		if got := BlocksPerSM(h100, tc.regs, tc.block); got != tc.want {
			t.Errorf("BlocksPerSM(H100, %d registers, %d threads) = %d, want %d", tc.regs, tc.block, got, tc.want)
		}
	}
}

func TestPTXAccesses(t *testing.T) {
	ptx := strings.Join([]string{
		".visible .entry first(",
		"\tld.global.f32 \t%f1, [%rd1];",
		"\tst.global.f32 \t[%rd2], %f1;",
		"}",
		".visible .entry second(",
		"\tld.global.nc.v4.u32 \t{%r1, %r2, %r3, %r4}, [%rd1];",
		"\tld.global.nc.f32 \t%f1, [%rd1];",
		"\tld.shared.f32 \t%f2, [%r9];",
		"\tst.global.v4.u32 \t[%rd2], {%r1, %r2, %r3, %r4};",
		"}",
	}, "\n")
	for _, tc := range []struct {
		name              string
		loads, nc, stores int
	}{{"first", 1, 0, 1}, {"second", 2, 2, 1}, {"third", 0, 0, 0}} {
		loads, nc, stores := ptxAccesses(ptx, tc.name)
		if loads != tc.loads || nc != tc.nc || stores != tc.stores {
			t.Errorf("ptxAccesses(%s) = %d loads, %d .nc, %d stores; want %d, %d, %d", tc.name, loads, nc, stores, tc.loads, tc.nc, tc.stores)
		}
	}
}

// TestFastEnoughFitsRecorded: the exercise's bar, a share of transpose_v3
// at 8192², lies well between what the recorded conflicted tile
// (transpose_v2) and the conflict-free ones (v3 itself, v4) reached, so
// a solution passes and a conflicted tile fails with room for noise.
func TestFastEnoughFitsRecorded(t *testing.T) {
	l, err := lessons.Find("memory-access")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range l.Recorded().Filter("Against the copy", "bench") {
		if len(r.Dims) == 2 && r.Dims[0] == 8192 && r.Dims[1] == 8192 {
			got[r.Variant] = r.Throughput
		}
	}
	v3 := got["transpose_v3"]
	if v3 == 0 || got["transpose_v2"] == 0 || got["transpose_v4"] == 0 {
		t.Fatalf("recorded at 8192²: %v; want transpose_v2, v3 and v4", got)
	}
	const margin = 0.1
	if slow := got["transpose_v2"] / v3; slow > fastEnough-margin {
		t.Errorf("transpose_v2 ran at %.2f of transpose_v3; the bar %.2f leaves it less than %.2f below", slow, fastEnough, margin)
	}
	if fast := got["transpose_v4"] / v3; fast < fastEnough+margin {
		t.Errorf("transpose_v4 ran at %.2f of transpose_v3; the bar %.2f leaves it less than %.2f above", fast, fastEnough, margin)
	}
}
