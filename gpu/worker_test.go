package gpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"cudarepl/internal/sysproc"
	"cudarepl/nvrtc"
)

func openFake(t *testing.T, timeout time.Duration) *Worker {
	t.Helper()
	w, err := Open(Options{Timeout: timeout, backend: "fake", Stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatalf("Open(fake) = %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

var fakeImage = &nvrtc.Image{Key: "fake-image", Name: "fake.cu", CUBIN: []byte{1}}

func fakeKernel(t *testing.T, w *Worker, name string) Kernel {
	t.Helper()
	k, err := w.LoadKernel(fakeImage, name)
	if err != nil {
		t.Fatalf("LoadKernel(%s) = %v", name, err)
	}
	return k
}

// fillAndCheck launches "fill" into fresh memory and reads it back.
func fillAndCheck(t *testing.T, w *Worker, fill Kernel, v float32) {
	t.Helper()
	const n = 37
	p, err := w.Alloc(4 * n)
	if err != nil {
		t.Fatalf("Alloc = %v", err)
	}
	if err := w.Launch(Launch{Kernel: fill, Grid: Dim(1), Block: Dim(n), Args: []Arg{Ptr(p), Float32(v), Int32(n)}}); err != nil {
		t.Fatalf("Launch(fill) = %v", err)
	}
	out := make([]byte, 4*n)
	if err := w.Read(out, p); err != nil {
		t.Fatalf("Read = %v", err)
	}
	for i := 0; i < n; i++ {
		if got := float32At(out, i); got != v {
			t.Fatalf("fill: out[%d] = %v, want %v", i, got, v)
		}
	}
}

func TestWorkerRoundTrip(t *testing.T) {
	w := openFake(t, time.Second)
	if got := w.Info().Name; got != "fake GPU" {
		t.Errorf("Info().Name = %q, want %q", got, "fake GPU")
	}
	p, err := w.Alloc(5)
	if err != nil {
		t.Fatal(err)
	}
	in := []byte("hello")
	if err := w.Write(p, in); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 5)
	if err := w.Read(out, p); err != nil || !bytes.Equal(out, in) {
		t.Errorf("Read = %q, %v; want %q, nil", out, err, in)
	}
	h, err := w.AllocHost(8, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHost(h, asBytes([]float32{1.5, -2})); err != nil {
		t.Fatal(err)
	}
	if got, err := DownloadHost[float32](w, h, 2); err != nil || got[0] != 1.5 || got[1] != -2 {
		t.Errorf("DownloadHost = %v, %v; want [1.5 -2]", got, err)
	}
	if _, err := DownloadHost[float32](w, h, -1); err == nil {
		t.Error("DownloadHost of -1 elements: no error")
	}
	fillAndCheck(t, w, fakeKernel(t, w, "fill"), 2.5)
	// A non-sticky device error comes back as itself, with no restart.
	err = w.Free(0xdead)
	var ce *CUDAError
	if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_INVALID_VALUE" {
		t.Errorf("Free(bad) = %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	if w.Restarts() != 0 {
		t.Errorf("Restarts() = %d after a plain error, want 0", w.Restarts())
	}
}

// TestWorkerLargeTransfers moves more than one pipe piece each way, to
// device and to host memory: the pieces land where they belong.
func TestWorkerLargeTransfers(t *testing.T) {
	w := openFake(t, 5*time.Second)
	n := pipePiece + 4099
	in := make([]byte, n)
	for i := range in {
		in[i] = byte(i*7 + i>>20)
	}
	p, err := w.Alloc(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	h, err := w.AllocHost(int64(n), true)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, n)
	if err := w.Write(p, in); err != nil {
		t.Fatal(err)
	}
	if err := w.Read(out, p); err != nil || !bytes.Equal(out, in) {
		t.Errorf("Read after Write of %d bytes: equal %v, %v", n, bytes.Equal(out, in), err)
	}
	clear(out)
	if err := w.WriteHost(h, in); err != nil {
		t.Fatal(err)
	}
	if err := w.ReadHost(out, h); err != nil || !bytes.Equal(out, in) {
		t.Errorf("ReadHost after WriteHost of %d bytes: equal %v, %v", n, bytes.Equal(out, in), err)
	}
	if err := w.Read(nil, p); err != nil {
		t.Errorf("Read of 0 bytes = %v", err)
	}
}

func TestInPieces(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want [][2]int
	}{
		{0, [][2]int{{0, 0}}},
		{5, [][2]int{{0, 5}}},
		{pipePiece, [][2]int{{0, pipePiece}}},
		{pipePiece + 1, [][2]int{{0, pipePiece}, {pipePiece, pipePiece + 1}}},
	} {
		var got [][2]int
		inPieces(tc.n, func(from, to int) error { got = append(got, [2]int{from, to}); return nil })
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("inPieces(%d): %v, want %v", tc.n, got, tc.want)
		}
	}
	calls := 0
	err := inPieces(3*pipePiece, func(from, to int) error { calls++; return errors.New("broken") })
	if err == nil || calls != 1 {
		t.Errorf("a failing piece: %v after %d calls, want the error after 1", err, calls)
	}
}

func TestWorkerRecovers(t *testing.T) {
	tests := []struct {
		kernel    string
		wantCause string
		wantCUDA  string // name of the wrapped CUDAError, if any
	}{
		{"fault", "faulted: CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{"crash", "killed the worker (signal: killed)", ""},
		{"hang", "ran past the 300ms time limit", ""},
	}
	for _, tt := range tests {
		t.Run(tt.kernel, func(t *testing.T) {
			w := openFake(t, 300*time.Millisecond)
			fill := fakeKernel(t, w, "fill")
			bad := fakeKernel(t, w, tt.kernel)
			oldPID := w.p.cmd.Process.Pid
			before, err := w.Alloc(64)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Launch(Launch{Kernel: bad, Grid: Dim(2), Block: Dim(32)})
			var we *WorkerError
			if !errors.As(err, &we) {
				t.Fatalf("Launch(%s) = %v, want a *WorkerError", tt.kernel, err)
			}
			want := "gpu: launch " + tt.kernel + " (grid 2x1x1, block 32x1x1) " + tt.wantCause + "; a fresh worker was started"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error = %q\nwant prefix %q", err, want)
			}
			var ce *CUDAError
			if got := errors.As(err, &ce); got != (tt.wantCUDA != "") || (got && ce.Name != tt.wantCUDA) {
				t.Errorf("errors.As(CUDAError) = %v (%v), want %q", got, ce, tt.wantCUDA)
			}
			if w.Restarts() != 1 {
				t.Errorf("Restarts() = %d, want 1", w.Restarts())
			}
			if gone, err := processGone(oldPID); !gone {
				t.Errorf("old worker %d still exists (%v)", oldPID, err)
			}
			// The kernel loaded before the restart is reloaded by itself.
			fillAndCheck(t, w, fill, 7)
			// Memory of the old worker went with it: freeing it must not
			// reach the new one, where the address may be someone else's.
			if err := w.Free(before); err != nil {
				t.Errorf("Free of the old worker's memory = %v, want nil (nothing to do)", err)
			}
		})
	}
}

func TestWorkerProgressKeepsLongBenchAlive(t *testing.T) {
	w := openFake(t, 250*time.Millisecond)
	slow := fakeKernel(t, w, "slow")
	var calls []int
	tm, err := w.Bench(Bench{
		Ops: [][]Op{{Launch{Kernel: slow, Grid: Dim(1), Block: Dim(1)}}}, Warmup: 1, Reps: 4,
		Progress: func(done, total int) {
			if total != 5 {
				t.Errorf("progress total = %d, want 5", total)
			}
			calls = append(calls, done)
		},
	})
	if err != nil {
		t.Fatalf("Bench of 5 × 100 ms with a 250 ms limit = %v; progress should keep it alive", err)
	}
	if len(tm.Device) != 4 {
		t.Errorf("len(Device) = %d, want 4", len(tm.Device))
	}
	if len(calls) == 0 || calls[len(calls)-1] != 5 {
		t.Errorf("progress calls = %v, want to end at 5", calls)
	}
}

// TestWorkerBenchWithoutWarmup: Warmup < 0 means none, through the
// worker as in process (the defaults are filled in once, in the worker).
func TestWorkerBenchWithoutWarmup(t *testing.T) {
	w := openFake(t, time.Second)
	fill := fakeKernel(t, w, "fill")
	p, err := w.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	last := 0
	_, err = w.Bench(Bench{Ops: [][]Op{{Launch{Kernel: fill, Grid: Dim(1), Block: Dim(1), Args: []Arg{Ptr(p), Float32(1), Int32(1)}}}},
		Warmup: -1, Reps: 2, Progress: func(done, total int) { last = total }})
	if err != nil || last != 2 {
		t.Errorf("Bench(Warmup: -1, Reps: 2) = %v with %d runs in all, want 2", err, last)
	}
}

func TestWorkerCloseLeavesNoProcess(t *testing.T) {
	w := openFake(t, time.Second)
	pid := w.p.cmd.Process.Pid
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if gone, err := processGone(pid); !gone {
		t.Errorf("worker %d still exists after Close (%v)", pid, err)
	}
	if _, err := w.Alloc(4); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Alloc after Close = %v, want a closed error", err)
	}
}

func TestOpenWithoutGPU(t *testing.T) {
	_, err := Open(Options{backend: "fake-nogpu"})
	if !errors.Is(err, ErrNoGPU) {
		t.Fatalf("Open = %v, want an error wrapping ErrNoGPU", err)
	}
	if want := "gpu: no NVIDIA driver found (libcuda.so.1)"; err.Error() != want {
		t.Errorf("Open = %q, want %q", err, want)
	}
}

// TestOpenRealWithoutDriver runs the real backend on a machine with no
// driver, as CI is: the worker must start, say why, and exit.
func TestOpenRealWithoutDriver(t *testing.T) {
	if _, err := loadDriver(); err == nil {
		t.Skip("libcuda.so.1 is present here; the no-driver path cannot be seen")
	}
	_, err := Open()
	if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "gpu: no NVIDIA driver found (libcuda.so.1)") {
		t.Fatalf("Open = %v, want the no-driver sentence wrapping ErrNoGPU", err)
	}
	if _, err := OpenInProcess(); !errors.Is(err, ErrNoGPU) {
		t.Errorf("OpenInProcess = %v, want ErrNoGPU", err)
	}
}

func TestNoGPUReason(t *testing.T) {
	tests := []struct {
		drv  string
		err  error
		want string
	}{
		{"NVIDIA driver 535.104.05", &CUDAError{Call: "cuInit", Code: 100, Name: "CUDA_ERROR_NO_DEVICE", Msg: "no CUDA-capable device is detected"},
			"NVIDIA driver 535.104.05 found, but no GPU: CUDA_ERROR_NO_DEVICE"},
		{"an NVIDIA driver for CUDA 12.2", &CUDAError{Call: "cuInit", Code: 803, Name: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", Msg: "system has unsupported display driver / cuda driver combination"},
			"an NVIDIA driver for CUDA 12.2 found, but it could not start: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (system has unsupported display driver / cuda driver combination)"},
	}
	for _, tt := range tests {
		if got := noGPUReason(tt.drv, tt.err); got != tt.want {
			t.Errorf("noGPUReason(%q, %v) =\n%q\nwant\n%q", tt.drv, tt.err, got, tt.want)
		}
	}
}

func TestParseModuleVersion(t *testing.T) {
	tests := []struct{ in, want string }{
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc 12\n", "535.104.05"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Mon Oct 13 2025\n", "580.159.04"},
		{"NVRM version: something else\n", ""},
	}
	for _, tt := range tests {
		if got := parseModuleVersion(tt.in); got != tt.want {
			t.Errorf("parseModuleVersion(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// unencodable is an Op that gob cannot send: its field is a channel.
type unencodable struct{ C chan int }

func (unencodable) Name() string                { return "unencodable" }
func (unencodable) Prepare(*Exec) (Step, error) { return Step{}, nil }

// TestWorkerSendFailure: a call that cannot be sent fails at once with a
// clear error, instead of waiting out the time limit.
func TestWorkerSendFailure(t *testing.T) {
	w := openFake(t, 5*time.Second)
	start := time.Now()
	err := w.Run(unencodable{C: make(chan int)})
	if err == nil || !strings.Contains(err.Error(), "could not be sent to the worker") {
		t.Fatalf("Run(unencodable) = %v, want a send error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the send error took %v; it should not wait for the time limit", d)
	}
	fillAndCheck(t, w, fakeKernel(t, w, "fill"), 3)
}

// echo is a library request that answers with its text reversed, or
// fails on "fail".
type echo struct{ Text string }

func (e echo) Serve(*Exec) (any, error) {
	if e.Text == "fail" {
		return nil, fmt.Errorf("echo: asked to fail")
	}
	r := []rune(e.Text)
	slices.Reverse(r)
	return string(r), nil
}

// unregistered is a request whose type no library registered.
type unregistered struct{}

func (unregistered) Serve(*Exec) (any, error) { return nil, nil }

// oddAnswer is an answer whose type no library registered.
type oddAnswer struct{ X int }

// askOdd is a registered request whose answer cannot cross the pipe.
type askOdd struct{}

func (askOdd) Serve(*Exec) (any, error) { return oddAnswer{1}, nil }

// parentOnly is a request only the parent process knows: a worker that
// was built without the library that registers it.
type parentOnly struct{ N int }

func (parentOnly) Serve(*Exec) (any, error) { return nil, nil }

func init() {
	RegisterLibrary(Library{Name: "echo", Types: []any{echo{}, askOdd{}}})
	if os.Getenv(sysproc.WorkerEnv) == "" {
		RegisterLibrary(Library{Name: "parent only", Types: []any{parentOnly{}}})
	}
}

// TestWorkerCall: a library's request crosses to the worker and back, its
// errors come back as errors, and a request of a type no library
// registered fails with a clear error.
func TestWorkerCall(t *testing.T) {
	w := openFake(t, 5*time.Second)
	got, err := w.Call(echo{"abc"})
	if err != nil || got != "cba" {
		t.Errorf(`Call(echo{"abc"}) = %q, %v; want "cba"`, got, err)
	}
	if _, err := w.Call(echo{"fail"}); err == nil || !strings.Contains(err.Error(), "asked to fail") {
		t.Errorf("Call(echo{fail}) = %v, want the library's error", err)
	}
	if _, err := w.Call(unregistered{}); err == nil || !strings.Contains(err.Error(), "could not be sent") {
		t.Errorf("Call(unregistered) = %v, want a send error", err)
	}
	if got, err := w.Call(echo{"ok"}); err != nil || got != "ko" {
		t.Errorf("Call after a failed send = %q, %v; want a fresh worker to answer", got, err)
	}
	restarts := w.Restarts()
	if _, err := w.Call(parentOnly{1}); err == nil || !strings.Contains(err.Error(), "could not be read by the worker") ||
		!strings.Contains(err.Error(), "import cudarepl/worker") {
		t.Errorf("Call(a type the worker does not know) = %v, want an error saying the worker could not read it, and why", err)
	}
	if w.Restarts() != restarts+1 {
		t.Errorf("after a call the worker could not read, %d restarts, want %d", w.Restarts(), restarts+1)
	}
	if got, err := w.Call(echo{"ok"}); err != nil || got != "ko" {
		t.Errorf("Call after an unreadable call = %q, %v; want a fresh worker to answer", got, err)
	}
	restarts = w.Restarts()
	if _, err := w.Call(askOdd{}); err == nil || !strings.Contains(err.Error(), "cannot cross to the caller") {
		t.Errorf("Call(an answer of an unregistered type) = %v, want an error saying it cannot cross", err)
	}
	if got, err := w.Call(echo{"ok"}); err != nil || got != "ko" || w.Restarts() != restarts {
		t.Errorf("Call after an answer that could not cross = %q, %v, %d restarts; want the same worker to answer", got, err, w.Restarts()-restarts)
	}
}
