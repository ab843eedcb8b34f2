// Package gputest holds what the GPU tests of several packages share: a
// worker opened for a test (or the test skipped where there is no GPU),
// device memory freed when the test ends, random inputs with their seed
// logged, and the TestMain that makes a test binary its own worker.
package gputest

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"
	"unsafe"

	"cudarepl/gpu"
)

// Main runs a package's tests in a binary that can be its own GPU worker:
// TestMain of a package that package worker imports (so that its tests
// cannot import worker) is Main(m), after the package has registered its
// library in its init.
func Main(m *testing.M) {
	gpu.ServeWorker()
	os.Exit(m.Run())
}

// Open opens a worker on the GPU, closed when t ends, or skips t where
// there is no GPU, saying why.
func Open(t testing.TB, opts ...gpu.Options) *gpu.Worker {
	t.Helper()
	w, err := gpu.Open(opts...)
	if errors.Is(err, gpu.ErrNoGPU) {
		t.Skipf("no GPU here: %v", err)
	}
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// Rand is a random source seeded from the clock, its seed in t's log.
func Rand(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Floats is n numbers uniform in [-1, 1).
func Floats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// Alloc allocates bytes on d, freed when t ends.
func Alloc(t testing.TB, d gpu.Device, bytes int64) gpu.DevicePtr {
	t.Helper()
	p, err := d.Alloc(bytes)
	if err != nil {
		t.Fatalf("Alloc(%d) = %v", bytes, err)
	}
	t.Cleanup(func() { d.Free(p) })
	return p
}

// Upload copies v to d, freed when t ends.
func Upload[T gpu.Element](t testing.TB, d gpu.Device, v []T) gpu.DevicePtr {
	t.Helper()
	p, err := gpu.Upload(d, v)
	if err != nil {
		t.Fatalf("Upload(%d elements) = %v", len(v), err)
	}
	t.Cleanup(func() { d.Free(p) })
	return p
}

// Bytes views v's memory as bytes, without copying.
func Bytes[T gpu.Element](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}
