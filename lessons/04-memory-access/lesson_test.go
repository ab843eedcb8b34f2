package memaccess

import (
	"strings"
	"testing"

	"cudarepl/gpu"
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
