//go:build gpu

package gpu_test

import (
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"cudarepl/gpu"
	"cudarepl/internal/gputest"

	"cudarepl/nvrtc"
)

// These tests need an NVIDIA GPU. Build them with -tags gpu (make gpu-test);
// where no GPU is found they skip and say why.

//go:embed testdata/kernels.cu
var testKernels string

// kernels compiles testdata/kernels.cu for w's GPU and loads the named kernels.
func kernels(t testing.TB, w gpu.Device, names ...string) map[string]gpu.Kernel {
	t.Helper()
	img, err := nvrtc.Compile(nvrtc.Source{Name: "testdata/kernels.cu", Code: testKernels}, nvrtc.CompileOptions{Arch: w.Info().Arch()})
	if err != nil {
		t.Fatalf("Compile = %v", err)
	}
	out := map[string]gpu.Kernel{}
	for _, n := range names {
		k, err := w.LoadKernel(img, n)
		if err != nil {
			t.Fatalf("LoadKernel(%s) = %v", n, err)
		}
		out[n] = k
	}
	return out
}

// poison is a NaN bit pattern no kernel computes by accident.
const poison = 0x7fc0dead

// runVadd adds fresh random vectors of n elements with kernel k and checks
// every element of the poisoned output against the CPU.
func runVadd(t testing.TB, d gpu.Device, k gpu.Kernel, n int, r *rand.Rand) {
	t.Helper()
	a, b := gputest.Floats(r, n), gputest.Floats(r, n)
	pa, pb := gputest.Upload(t, d, a), gputest.Upload(t, d, b)
	pc := gputest.Alloc(t, d, int64(4*n))
	if err := d.Run(gpu.Memset{Dst: pc, Value: poison, Count: int64(n)}); err != nil {
		t.Fatalf("poison output: %v", err)
	}
	threads := n
	if k.Name == "vadd4" {
		threads = n/4 + n%4
	}
	l := gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(threads, 256)), Block: gpu.Dim(256), Args: []gpu.Arg{gpu.Ptr(pa), gpu.Ptr(pb), gpu.Ptr(pc), gpu.Int32(int32(n))}}
	if err := d.Launch(l); err != nil {
		t.Fatalf("%s n=%d: %v", k.Name, n, err)
	}
	c, err := gpu.Download[float32](d, pc, n)
	if err != nil {
		t.Fatal(err)
	}
	bad, first := 0, -1
	for i := range c {
		if c[i] != a[i]+b[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s n=%d: c[%d] = %v, want %v; %d of %d differ", k.Name, n, first, c[first], a[first]+b[first], bad, n)
	}
}

func TestGPUVectorAdd(t *testing.T) {
	w := gputest.Open(t)
	ks := kernels(t, w, "vadd", "vadd4")
	r := gputest.Rand(t)
	for _, name := range []string{"vadd", "vadd4"} {
		for _, n := range []int{1, 3, 1000, 1023, 1<<20 + 7, 1 << 26} {
			runVadd(t, w, ks[name], n, r)
		}
	}
}

func TestGPUCompileError(t *testing.T) {
	_, err := nvrtc.Compile(nvrtc.Source{Name: "bad.cu", Code: "extern \"C\" __global__ void k(float* x) {\n  x[0] = undefined_thing;\n}\n"}, nvrtc.CompileOptions{Arch: "sm_90"})
	var ce *nvrtc.CompileError
	if !errors.As(err, &ce) || ce.Line != 2 {
		t.Fatalf("nvrtc.Compile(bad) = %v, want a *nvrtc.CompileError at line 2", err)
	}
}

// recoverFrom runs a kernel that breaks the worker, then a correct vadd, and
// returns how long it took from the bad launch to the good one's end.
func recoverFrom(t *testing.T, w *gpu.Worker, bad gpu.Launch, wantCause string) time.Duration {
	t.Helper()
	ks := kernels(t, w, "vadd")
	start := time.Now()
	err := w.Launch(bad)
	var we *gpu.WorkerError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), wantCause) || !strings.Contains(err.Error(), bad.Kernel.Name) {
		t.Fatalf("Launch(%s) = %v, want a WorkerError naming the kernel and %q", bad.Kernel.Name, err, wantCause)
	}
	t.Logf("%s: %v", bad.Kernel.Name, err)
	// Memory from before the restart is gone: everything is made afresh.
	r := gputest.Rand(t)
	n := 1000
	a := gputest.Floats(r, n)
	pa, err := gpu.Upload(w, a)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := w.Alloc(int64(4 * n))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Launch(gpu.Launch{Kernel: ks["vadd"], Grid: gpu.Dim(gpu.Blocks(n, 256)), Block: gpu.Dim(256), Args: []gpu.Arg{gpu.Ptr(pa), gpu.Ptr(pa), gpu.Ptr(pc), gpu.Int32(int32(n))}}); err != nil {
		t.Fatalf("launch after recovery: %v", err)
	}
	took := time.Since(start)
	c, err := gpu.Download[float32](w, pc, n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if c[i] != 2*a[i] {
			t.Fatalf("after recovery: c[%d] = %v, want %v", i, c[i], 2*a[i])
		}
	}
	return took
}

func oobLaunch(ks map[string]gpu.Kernel, p gpu.DevicePtr) gpu.Launch {
	return gpu.Launch{Kernel: ks["vadd_oob"], Grid: gpu.Dim(4), Block: gpu.Dim(256), Args: []gpu.Arg{gpu.Ptr(p), gpu.Int32(1024)}}
}

func spinLaunch(ks map[string]gpu.Kernel, p gpu.DevicePtr) gpu.Launch {
	return gpu.Launch{Kernel: ks["spin"], Grid: gpu.Dim(1), Block: gpu.Dim(1), Args: []gpu.Arg{gpu.Ptr(p)}}
}

func TestGPUOutOfBoundsRecovers(t *testing.T) {
	w := gputest.Open(t)
	ks := kernels(t, w, "vadd_oob")
	p, _ := w.Alloc(4096)
	took := recoverFrom(t, w, oobLaunch(ks, p), "faulted: CUDA_ERROR_ILLEGAL_ADDRESS")
	t.Logf("out-of-bounds kernel to next successful launch: %v", took)
}

func TestGPUTimeLimitRecovers(t *testing.T) {
	w := gputest.Open(t, gpu.Options{Timeout: 2 * time.Second})
	ks := kernels(t, w, "spin")
	flag := gputest.Alloc(t, w, 4)
	if err := w.Run(gpu.Memset{Dst: flag, Count: 1}); err != nil {
		t.Fatal(err)
	}
	took := recoverFrom(t, w, spinLaunch(ks, flag), "ran past the 2s time limit")
	t.Logf("endless kernel to next successful launch: %v (2 s of it the time limit)", took)
}

func TestGPUCopies(t *testing.T) {
	w := gputest.Open(t)
	r := gputest.Rand(t)
	for _, pinned := range []bool{false, true} {
		const n = 3<<20 + 5
		src := gputest.Floats(r, n)
		h, err := w.AllocHost(4*n, pinned)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteHost(h, gputest.Bytes(src)); err != nil {
			t.Fatal(err)
		}
		d1, d2 := gputest.Alloc(t, w, 4*n), gputest.Alloc(t, w, 4*n)
		h2, err := w.AllocHost(4*n, pinned)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Run(
			gpu.Copy{Kind: gpu.HostToDevice, Dst: uint64(d1), Src: uint64(h), Bytes: 4 * n},
			gpu.Copy{Kind: gpu.DeviceToDevice, Dst: uint64(d2), Src: uint64(d1), Bytes: 4 * n},
			gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(h2), Src: uint64(d2), Bytes: 4 * n},
		)
		if err != nil {
			t.Fatalf("pinned=%v: %v", pinned, err)
		}
		back := make([]float32, n)
		if err := w.ReadHost(gputest.Bytes(back), h2); err != nil {
			t.Fatal(err)
		}
		for i := range back {
			if back[i] != src[i] {
				t.Fatalf("pinned=%v: back[%d] = %v, want %v", pinned, i, back[i], src[i])
			}
		}
		w.FreeHost(h)
		w.FreeHost(h2)
	}
}

func TestGPUGraphReplay(t *testing.T) {
	w := gputest.Open(t)
	ks := kernels(t, w, "bump")
	x := gputest.Alloc(t, w, 4)
	if err := w.Run(gpu.Memset{Dst: x, Count: 1}); err != nil {
		t.Fatal(err)
	}
	ops := make([]gpu.Op, 1000)
	for i := range ops {
		ops[i] = gpu.Launch{Kernel: ks["bump"], Grid: gpu.Dim(1), Block: gpu.Dim(32), Args: []gpu.Arg{gpu.Ptr(x)}}
	}
	g, err := w.Capture(ops...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.FreeGraph(g)
	got, _ := gpu.Download[int32](w, x, 1)
	if got[0] != 0 {
		t.Fatalf("capture ran the kernels: x = %d, want 0", got[0])
	}
	if err := w.Run(gpu.GraphOp{g}, gpu.GraphOp{g}); err != nil {
		t.Fatal(err)
	}
	got, _ = gpu.Download[int32](w, x, 1)
	if got[0] != 2000 {
		t.Fatalf("after two replays of 1000 bumps: x = %d, want 2000", got[0])
	}
}

// TestGPUGraphUpdateAndFreedBuffer: a graph updated in place bumps the new
// buffer; a graph whose buffer was freed is refused, not replayed on
// whatever was allocated there next.
func TestGPUGraphUpdateAndFreedBuffer(t *testing.T) {
	w := gputest.Open(t)
	ks := kernels(t, w, "bump")
	x, y := gputest.Alloc(t, w, 4), gputest.Alloc(t, w, 4)
	if err := w.Run(gpu.Memset{Dst: x, Count: 1}, gpu.Memset{Dst: y, Count: 1}); err != nil {
		t.Fatal(err)
	}
	bump := func(p gpu.DevicePtr) gpu.Op {
		return gpu.Launch{Kernel: ks["bump"], Grid: gpu.Dim(1), Block: gpu.Dim(32), Args: []gpu.Arg{gpu.Ptr(p)}}
	}
	g, err := w.Capture(bump(x), bump(x))
	if err != nil {
		t.Fatal(err)
	}
	defer w.FreeGraph(g)
	if g.Built <= 0 {
		t.Errorf("Capture took %v, want a positive time", g.Built)
	}
	if g, err = w.Update(g, bump(y), bump(y)); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(gpu.GraphOp{g}); err != nil {
		t.Fatal(err)
	}
	gx, _ := gpu.Download[int32](w, x, 1)
	gy, _ := gpu.Download[int32](w, y, 1)
	if gx[0] != 0 || gy[0] != 2 {
		t.Fatalf("after the update and one replay: x = %d, y = %d; want 0 and 2", gx[0], gy[0])
	}
	if _, err := w.Update(g, bump(y)); err == nil || !strings.Contains(err.Error(), "shape changed") {
		t.Errorf("Update with fewer ops = %v, want an error saying the shape changed", err)
	}
	if err := w.Free(y); err != nil {
		t.Fatal(err)
	}
	z := gputest.Alloc(t, w, 4)
	err = w.Run(gpu.GraphOp{g})
	if err == nil || !strings.Contains(err.Error(), "freed after it was captured") {
		t.Fatalf("replaying a graph after freeing its buffer (reallocated at %#x, was %#x) = %v, want a refusal", uint64(z), uint64(y), err)
	}
}

// TestGPUSlotsAndPool: a step that allocates its temporary into a slot,
// from cuMemAlloc or from the pool, computes what a preallocated one does,
// and the pool keeps its memory only above a release threshold of 0.
func TestGPUSlotsAndPool(t *testing.T) {
	w := gputest.Open(t)
	ks := kernels(t, w, "bump")
	x := gputest.Alloc(t, w, 4)
	for _, pool := range []bool{false, true} {
		for _, keep := range []int64{0, 1 << 40} {
			if _, err := w.MemPool(keep); err != nil {
				t.Fatal(err)
			}
			step := []gpu.Op{
				gpu.AllocSlot{Slot: 3, Bytes: 1 << 20, Pool: pool},
				gpu.Memset{Dst: x, Count: 1},
				gpu.Launch{Kernel: ks["bump"], Grid: gpu.Dim(1), Block: gpu.Dim(32), Args: []gpu.Arg{gpu.SlotPtr(3)}},
				gpu.Launch{Kernel: ks["bump"], Grid: gpu.Dim(1), Block: gpu.Dim(32), Args: []gpu.Arg{gpu.Ptr(x)}},
				gpu.FreeSlot{Slot: 3, Pool: pool},
			}
			if _, err := w.Bench(gpu.Bench{Name: "slot step", Ops: [][]gpu.Op{step}, Reps: 3}); err != nil {
				t.Fatalf("pool %v: %v", pool, err)
			}
			got, _ := gpu.Download[int32](w, x, 1)
			st, err := w.MemPool(-1)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != 1 || st.Used != 0 {
				t.Errorf("pool %v, threshold %d: x = %d, pool in use %d bytes; want 1 and 0", pool, keep, got[0], st.Used)
			}
			if pool && (keep == 0) != (st.Reserved == 0) {
				t.Errorf("pool, threshold %d: it holds %d bytes after the steps", keep, st.Reserved)
			}
		}
	}
	w.MemPool(0)
	if err := w.Run(gpu.Launch{Kernel: ks["bump"], Grid: gpu.Dim(1), Block: gpu.Dim(32), Args: []gpu.Arg{gpu.SlotPtr(9)}}); err == nil || !strings.Contains(err.Error(), "holds no memory") {
		t.Errorf("a launch on an empty slot = %v, want an error", err)
	}
}

// TestGPUStreamsAndTimeline: a two-chunk pipeline (copy in, add, copy out)
// on two streams from pinned memory, joined back to the device's stream by
// events, computes c = a + b, and its timeline puts each op on its stream
// in order.
func TestGPUStreamsAndTimeline(t *testing.T) {
	w := gputest.Open(t)
	ks := kernels(t, w, "vadd")
	const n, chunks = 1 << 22, 2
	r := gputest.Rand(t)
	a, b := gputest.Floats(r, n), gputest.Floats(r, n)
	host := func(v []float32) gpu.HostPtr {
		p, err := w.AllocHost(4*n, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.FreeHost(p) })
		if v != nil {
			if err := w.WriteHost(p, gputest.Bytes(v)); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	ha, hb, hc := host(a), host(b), host(nil)
	da, db, dc := gputest.Alloc(t, w, 4*n), gputest.Alloc(t, w, 4*n), gputest.Alloc(t, w, 4*n)
	const m = n / chunks
	ops := []gpu.Op{gpu.Record{Event: 0}}
	for i := range chunks {
		s, off := i+1, uint64(4*m*i)
		on := func(op gpu.Op) gpu.Op { return gpu.OnStream{Stream: s, Op: op} }
		ops = append(ops, on(gpu.WaitFor{Event: 0}),
			on(gpu.Copy{Kind: gpu.HostToDevice, Dst: uint64(da) + off, Src: uint64(ha) + off, Bytes: 4 * m}),
			on(gpu.Copy{Kind: gpu.HostToDevice, Dst: uint64(db) + off, Src: uint64(hb) + off, Bytes: 4 * m}),
			on(gpu.Launch{Kernel: ks["vadd"], Grid: gpu.Dim(gpu.Blocks(m, 256)), Block: gpu.Dim(256),
				Args: []gpu.Arg{gpu.Ptr(da + gpu.DevicePtr(off)), gpu.Ptr(db + gpu.DevicePtr(off)), gpu.Ptr(dc + gpu.DevicePtr(off)), gpu.Int32(m)}}),
			on(gpu.Copy{Kind: gpu.DeviceToHost, Dst: uint64(hc) + off, Src: uint64(dc) + off, Bytes: 4 * m}),
			on(gpu.Record{Event: s}))
	}
	for i := range chunks {
		ops = append(ops, gpu.WaitFor{Event: i + 1})
	}
	spans, err := w.Timeline(ops...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gpu.DownloadHost[float32](w, hc, n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != a[i]+b[i] {
			t.Fatalf("c[%d] = %v, want %v", i, got[i], a[i]+b[i])
		}
	}
	last := map[int]time.Duration{}
	for _, sp := range spans {
		if sp.End < sp.Start || sp.Start < last[sp.Stream] {
			t.Errorf("span %+v is out of order on its stream (the last ended at %v)", sp, last[sp.Stream])
		}
		last[sp.Stream] = sp.End
	}
	if len(spans) != len(ops) || spans[4].Stream != 1 || spans[4].Op != "vadd" {
		t.Errorf("timeline: %+v", spans)
	}
	t.Logf("timeline: %+v", spans)
}

func TestGPUOccupancyAndAttrs(t *testing.T) {
	w := gputest.Open(t)
	ks := kernels(t, w, "vadd")
	k := ks["vadd"]
	if k.Attrs.MaxThreadsPerBlock < 256 || k.Attrs.Registers <= 0 || k.Attrs.BinaryVersion == 0 {
		t.Errorf("attributes of vadd = %+v", k.Attrs)
	}
	n, err := w.Occupancy(k, 256, 0)
	if err != nil || n <= 0 {
		t.Errorf("Occupancy(vadd, 256) = %d, %v", n, err)
	}
	info := w.Info()
	if want := info.MaxThreadsPerSM / 256; n != want && n != info.MaxBlocksPerSM {
		t.Logf("occupancy %d blocks of 256 (thread limit allows %d)", n, want)
	}
	err = w.Launch(gpu.Launch{Kernel: k, Grid: gpu.Dim(1), Block: gpu.Dim(2048), Args: []gpu.Arg{gpu.Ptr(0), gpu.Ptr(0), gpu.Ptr(0), gpu.Int32(0)}})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("launch with 2048 threads per block = %v, want a clear limit error", err)
	}
	fmt.Println(strings.Repeat("-", 40))
	for _, row := range info.Rows() {
		fmt.Printf("%-24s %s\n", row[0], row[1])
	}
}
