package gpu

import "unsafe"

// nextByte steps a C string pointer by one byte.
func nextByte(p *byte) *byte { return (*byte)(unsafe.Add(unsafe.Pointer(p), 1)) }

// cString returns a NUL-terminated copy of s for C to read.
func cString(s string) []byte { return append([]byte(s), 0) }
