//go:build gpu

package gpu_test

import (
	"bytes"
	"testing"
	"time"

	"cudarepl/gpu"
	"cudarepl/internal/gputest"
	"cudarepl/nvrtc"
)

// These tests need two GPUs; with one they skip and say so.

// peerKernels are the kernels of the ordering test.
const peerKernels = `
// late_write spins for about cycles clock cycles, then writes v to *x: a
// write that lands long after the launch.
extern "C" __global__ void late_write(int* x, int v, long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
    *x = v;
}

// copy_int copies one int; on GPU 1, from GPU 0's memory over peer access.
extern "C" __global__ void copy_int(const int* src, int* dst) { *dst = *src; }
`

// twoGPUs opens a worker, and GPU 1 of it, or skips t where the driver
// shows fewer than two GPUs.
func twoGPUs(t *testing.T) (*gpu.Worker, gpu.Device) {
	t.Helper()
	w := gputest.Open(t)
	if n := w.Info().Devices; n < 2 {
		t.Skipf("needs 2 GPUs; the driver shows %d here", n)
	}
	g1, err := gpu.On(w, 1)
	if err != nil {
		t.Fatalf("On(w, 1) = %v", err)
	}
	return w, g1
}

// peerKernel compiles peerKernels for d's GPU and loads kernel name there.
func peerKernel(t *testing.T, d gpu.Device, name string) gpu.Kernel {
	t.Helper()
	img, err := nvrtc.Compile(nvrtc.Source{Name: "peer.cu", Code: peerKernels}, nvrtc.CompileOptions{Arch: d.Info().Arch()})
	if err != nil {
		t.Fatalf("Compile = %v", err)
	}
	k, err := d.LoadKernel(img, name)
	if err != nil {
		t.Fatalf("LoadKernel(%s) on %s = %v", name, d.Info().PCIAddress, err)
	}
	return k
}

func TestGPUOnPeer(t *testing.T) {
	w, g1 := twoGPUs(t)
	i0, i1 := w.Info(), g1.Info()
	t.Logf("GPU 0: %s at %s; GPU 1: %s at %s", i0.Name, i0.PCIAddress, i1.Name, i1.PCIAddress)
	if i1.PCIAddress == i0.PCIAddress || i1.Devices != i0.Devices {
		t.Errorf("GPU 1 at %s of %d, GPU 0 at %s of %d: want another address, the same count", i1.PCIAddress, i1.Devices, i0.PCIAddress, i0.Devices)
	}
	r := gputest.Rand(t)
	for _, n := range []int{1, 1000, 1<<20 + 3} {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(r.Uint32())
		}
		p := gputest.Alloc(t, g1, int64(n))
		if err := g1.Write(p, in); err != nil {
			t.Fatalf("On(w, 1).Write(%d bytes) = %v", n, err)
		}
		out := make([]byte, n)
		if err := g1.Read(out, p); err != nil {
			t.Fatalf("On(w, 1).Read(%d bytes) = %v", n, err)
		}
		if i := firstDiff(out, in); i >= 0 {
			t.Fatalf("On(w, 1): %d bytes read back: byte %d = %#x, want %#x", n, i, out[i], in[i])
		}
	}
	// A kernel on GPU 1, loaded there.
	runVadd(t, g1, kernels(t, g1, "vadd")["vadd"], 1<<20+7, r)
}

// firstDiff is the first index where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func TestGPUPeerCopy(t *testing.T) {
	w, g1 := twoGPUs(t)
	gpus := []gpu.Device{w, g1}
	r := gputest.Rand(t)
	for _, dir := range [][2]int{{0, 1}, {1, 0}} {
		src, dst := dir[0], dir[1]
		for _, n := range []int{1, 4097, 64<<20 + 5} {
			in := make([]byte, n)
			for i := range in {
				in[i] = byte(r.Uint32())
			}
			ps, pd := gputest.Alloc(t, gpus[src], int64(n)), gputest.Alloc(t, gpus[dst], int64(n))
			if err := gpus[src].Write(ps, in); err != nil {
				t.Fatal(err)
			}
			if err := gpus[dst].Write(pd, bytes.Repeat([]byte{0xa5}, n)); err != nil { // poison
				t.Fatal(err)
			}
			// Enqueued on the source GPU's stream: Run waits for it there.
			op := gpu.PeerCopy{Dst: pd, DstDevice: dst, Src: ps, SrcDevice: src, Bytes: int64(n)}
			if err := gpus[src].Run(op); err != nil {
				t.Fatalf("%s of %d bytes = %v", op.Name(), n, err)
			}
			out := make([]byte, n)
			if err := gpus[dst].Read(out, pd); err != nil {
				t.Fatal(err)
			}
			if i := firstDiff(out, in); i >= 0 {
				t.Fatalf("%s of %d bytes: byte %d = %#x, want %#x", op.Name(), n, i, out[i], in[i])
			}
		}
	}
}

// GPU 1's kernel reads what GPU 0's kernel writes after a long spin: with
// WaitPeer it waits for GPU 0's event, and reads the value written.
func TestGPUWaitPeer(t *testing.T) {
	w, g1 := twoGPUs(t)
	late, copyInt := peerKernel(t, w, "late_write"), peerKernel(t, g1, "copy_int")
	x0, y1 := gputest.Alloc(t, w, 4), gputest.Alloc(t, g1, 4)
	cycles := int64(w.Info().ClockKHz) * 50 // about 50 ms
	run := func(wait bool, v int32) int32 {
		t.Helper()
		steps := []gpu.DevOp{
			{Device: 0, Op: gpu.Memset{Dst: x0, Value: 0, Count: 1}},
			{Device: 1, Op: gpu.Memset{Dst: y1, Value: 0xdead, Count: 1}},
			{Device: 0, Op: gpu.Launch{Kernel: late, Grid: gpu.Dim(1), Block: gpu.Dim(1), Args: []gpu.Arg{gpu.Ptr(x0), gpu.Int32(v), gpu.Int64(cycles)}}},
			{Device: 0, Op: gpu.Record{Event: 7}},
		}
		if wait {
			steps = append(steps, gpu.DevOp{Device: 1, Op: gpu.WaitPeer{Device: 0, Event: 7}})
		}
		steps = append(steps, gpu.DevOp{Device: 1, Op: gpu.Launch{Kernel: copyInt, Grid: gpu.Dim(1), Block: gpu.Dim(1), Args: []gpu.Arg{gpu.Ptr(x0), gpu.Ptr(y1)}}})
		if _, err := gpu.RunMulti(w, gpu.Multi{Name: "late write", Devices: 2, Steps: steps, Reps: 1}); err != nil {
			t.Fatalf("RunMulti(wait %v) = %v", wait, err)
		}
		y, err := gpu.Download[int32](g1, y1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return y[0]
	}
	if got := run(true, 42); got != 42 {
		t.Errorf("GPU 1 read %d after WaitPeer, want 42 (GPU 0's late write)", got)
	}
	// The control, logged only: without the wait GPU 1 reads what is
	// there when it runs, 42 from before or 0 from the memset, unless it
	// happens to run after the late write of 43.
	t.Logf("without WaitPeer, GPU 1 read %d (43 once GPU 0's write has landed)", run(false, 43))
}

func TestGPURunMultiTimeline(t *testing.T) {
	w, g1 := twoGPUs(t)
	const n = 1 << 22
	r := gputest.Rand(t)
	type vectors struct{ a, b, c gpu.DevicePtr }
	var vs [2]vectors
	var want [2][]float32
	var steps []gpu.DevOp
	for g, d := range []gpu.Device{w, g1} {
		a, b := gputest.Floats(r, n), gputest.Floats(r, n)
		want[g] = make([]float32, n)
		for i := range a {
			want[g][i] = a[i] + b[i]
		}
		vs[g] = vectors{gputest.Upload(t, d, a), gputest.Upload(t, d, b), gputest.Alloc(t, d, 4*n)}
		k := kernels(t, d, "vadd")["vadd"]
		steps = append(steps, gpu.DevOp{Device: g, Op: gpu.Launch{Kernel: k, Grid: gpu.Dim(gpu.Blocks(n, 256)), Block: gpu.Dim(256),
			Args: []gpu.Arg{gpu.Ptr(vs[g].a), gpu.Ptr(vs[g].b), gpu.Ptr(vs[g].c), gpu.Int32(n)}}})
	}
	scratch, copied := gputest.Alloc(t, w, 4*n), gputest.Alloc(t, g1, 4*n)
	steps = append(steps,
		gpu.DevOp{Device: 0, Op: gpu.OnStream{Stream: 1, Op: gpu.Memset{Dst: scratch, Value: 1, Count: n}}},
		// Device -1: prepared and enqueued with GPU 0 current, a span on each GPU.
		gpu.DevOp{Device: -1, Op: gpu.PeerCopy{Dst: copied, DstDevice: 1, Src: scratch, SrcDevice: 0, Bytes: 4 * n}})
	const reps = 5
	res, err := gpu.RunMulti(w, gpu.Multi{Name: "vadd on each", Devices: 2, Steps: steps, Warmup: 2, Reps: reps, Timeline: true})
	if err != nil {
		t.Fatalf("RunMulti = %v", err)
	}
	if len(res.Times) != reps || len(res.PerGPU) != 2 || len(res.PerGPU[0]) != reps || len(res.PerGPU[1]) != reps {
		t.Fatalf("RunMulti: %d times, per GPU %v; want %d, [2][%d]", len(res.Times), res.PerGPU, reps, reps)
	}
	for i, tm := range res.Times {
		if tm <= 0 || tm != max(res.PerGPU[0][i], res.PerGPU[1][i]) {
			t.Errorf("repetition %d: %v, GPUs %v and %v; want the longer, above 0", i, tm, res.PerGPU[0][i], res.PerGPU[1][i])
		}
	}
	wantSpans := [][]string{{"vadd", "memset", "peer copy GPU 0 → GPU 1"}, {"vadd", "peer copy GPU 0 → GPU 1"}}
	if len(res.Spans) != 2 {
		t.Fatalf("RunMulti: spans of %d GPUs, want 2", len(res.Spans))
	}
	for g, spans := range res.Spans {
		var names []string
		for _, s := range spans {
			names = append(names, s.Op)
			t.Logf("GPU %d stream %d %-26s %8.1f → %8.1f µs", g, s.Stream, s.Op, float64(s.Start)/1e3, float64(s.End)/1e3)
			if s.Start < 0 || s.End < s.Start || s.End > res.PerGPU[g][reps-1]+time.Microsecond {
				t.Errorf("GPU %d, %s: span %v → %v outside the repetition's %v", g, s.Op, s.Start, s.End, res.PerGPU[g][reps-1])
			}
		}
		if len(names) != len(wantSpans[g]) {
			t.Errorf("GPU %d spans %q, want %q", g, names, wantSpans[g])
			continue
		}
		for i := range names {
			if names[i] != wantSpans[g][i] {
				t.Errorf("GPU %d spans %q, want %q", g, names, wantSpans[g])
				break
			}
		}
	}
	for g, d := range []gpu.Device{w, g1} {
		c, err := gpu.Download[float32](d, vs[g].c, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range c {
			if c[i] != want[g][i] {
				t.Fatalf("GPU %d: c[%d] = %v, want %v", g, i, c[i], want[g][i])
			}
		}
	}
}

// In this process: GPU 1's context opens from GPU 0's and closes with it.
func TestGPUInProcessPeers(t *testing.T) {
	c, err := gpu.OpenInProcess()
	if err != nil {
		t.Skipf("no GPU here: %v", err)
	}
	defer c.Close()
	if n := c.Info().Devices; n < 2 {
		t.Skipf("needs 2 GPUs; the driver shows %d here", n)
	}
	g1, err := gpu.On(c, 1)
	if err != nil {
		t.Fatalf("On(ctx, 1) = %v", err)
	}
	in := []byte("one GPU to another")
	p0, err := gpu.Upload(c, in)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := g1.Alloc(int64(len(in)))
	if err != nil {
		t.Fatal(err)
	}
	if err := g1.Run(gpu.PeerCopy{Dst: p1, DstDevice: 1, Src: p0, SrcDevice: 0, Bytes: int64(len(in))}); err != nil {
		t.Fatalf("PeerCopy on GPU 1 = %v", err)
	}
	out := make([]byte, len(in))
	if err := g1.Read(out, p1); err != nil || !bytes.Equal(out, in) {
		t.Fatalf("GPU 1 read %q, %v; want %q", out, err, in)
	}
	if err := g1.Close(); err != nil {
		t.Errorf("closing GPU 1's context = %v", err)
	}
	if _, err := g1.Alloc(8); err != nil {
		t.Errorf("GPU 1 after its own Close = %v; want it open until GPU 0 closes", err)
	}
	c.Close()
	if _, err := g1.Alloc(8); err == nil {
		t.Errorf("GPU 1 allocated after GPU 0 closed; want an error")
	}
}
