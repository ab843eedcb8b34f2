//go:build unix

package gpu

import "syscall"

// mapHost maps n bytes of anonymous, pageable memory outside the Go heap.
func mapHost(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// unmapHost releases memory from mapHost.
func unmapHost(mem []byte) error { return syscall.Munmap(mem) }
