package gpu

import "testing"

// TestMapHost: pageable host memory maps at the sizes asked, is zeroed,
// takes writes to its first and last byte, and unmaps.
func TestMapHost(t *testing.T) {
	for _, n := range []int{1, 4096, 3<<20 + 5} {
		mem, err := mapHost(n)
		if err != nil {
			t.Fatalf("mapHost(%d): %v", n, err)
		}
		if len(mem) != n || mem[0] != 0 || mem[n-1] != 0 {
			t.Errorf("mapHost(%d): %d bytes, first %d, last %d; want %d zeroed bytes", n, len(mem), mem[0], mem[n-1], n)
		}
		mem[0], mem[n-1] = 1, 2
		if mem[n-1] != 2 || n > 1 && mem[0] != 1 {
			t.Errorf("mapHost(%d): writes did not hold", n)
		}
		if err := unmapHost(mem); err != nil {
			t.Errorf("unmapHost(%d bytes): %v", n, err)
		}
	}
}
