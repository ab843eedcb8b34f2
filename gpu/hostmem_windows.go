package gpu

import (
	"fmt"
	"syscall"
	"unsafe"
)

// mapHost maps n bytes of pageable memory outside the Go heap: a view of
// a mapping backed by the paging file, Windows' anonymous mmap.
func mapHost(n int) ([]byte, error) {
	size := uint64(n)
	h, err := syscall.CreateFileMapping(syscall.InvalidHandle, nil, syscall.PAGE_READWRITE, uint32(size>>32), uint32(size), nil)
	if err != nil {
		return nil, fmt.Errorf("CreateFileMapping of %d bytes: %w", n, err)
	}
	// The view keeps the mapping alive once its handle is closed.
	defer syscall.CloseHandle(h)
	addr, err := syscall.MapViewOfFile(h, syscall.FILE_MAP_WRITE, 0, 0, uintptr(n))
	if err != nil {
		return nil, fmt.Errorf("MapViewOfFile of %d bytes: %w", n, err)
	}
	// The view is outside the Go heap and never moves: its address, held
	// as a uintptr, may become a pointer (read through &addr, as vet
	// cannot tell this uintptr from one of Go's memory).
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n), nil
}

// unmapHost releases memory from mapHost.
func unmapHost(mem []byte) error { return syscall.UnmapViewOfFile(uintptr(unsafe.Pointer(&mem[0]))) }
