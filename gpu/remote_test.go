//go:build unix

package gpu_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cudarepl/gpu"
	"cudarepl/gpu/remote"
	"cudarepl/nvrtc"
)

// remoteWorkerEnv makes the test binary a remote worker's host end
// (remote.Serve on its stdin and stdout); its value, where not "1", is the
// backend it serves whatever the client asks for (so that a cudarepl,
// which asks for the GPU, can be served the fake one).
const remoteWorkerEnv = "CUDAREPL_TEST_REMOTE_WORKER"

// TestRemoteWorkerProcess is not a test: run with remoteWorkerEnv set, as
// the command of a remote.Transport, it is "cudarepl worker", serving
// fakes.
func TestRemoteWorkerProcess(t *testing.T) {
	backend := os.Getenv(remoteWorkerEnv)
	if backend == "" {
		t.Skip("a helper process: the host end of a remote worker")
	}
	var in io.Reader = os.Stdin
	if backend != "1" {
		in = withBackend(os.Stdin, backend)
	}
	os.Exit(remote.Serve("test", in, os.Stdout))
}

// withBackend is in with the backend of the setup line, its first line,
// replaced by backend.
func withBackend(in io.Reader, backend string) io.Reader {
	br := bufio.NewReader(in)
	line, err := br.ReadString('\n')
	var s map[string]any // the setup, which a fake's backend replaces
	if err != nil || json.Unmarshal([]byte(line), &s) != nil {
		return io.MultiReader(strings.NewReader(line), br)
	}
	s["Backend"] = backend
	b, _ := json.Marshal(s)
	return io.MultiReader(bytes.NewReader(append(b, '\n')), br)
}

// helperCommand is the command line that runs this test binary as a
// remote worker's host end.
func helperCommand(backend string) string {
	return fmt.Sprintf("env %s=%s %s -test.run=^TestRemoteWorkerProcess$", remoteWorkerEnv, backend, strconv.Quote(os.Args[0]))
}

// openRemote opens a fake worker through cmdline, with what set changes
// in its Transport, closed when t ends.
func openRemote(t *testing.T, cmdline string, timeout time.Duration, stderr io.Writer, set ...func(*remote.Transport)) *gpu.Worker {
	t.Helper()
	r, err := remote.Command(cmdline)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range set {
		f(r)
	}
	if stderr == nil {
		stderr = &bytes.Buffer{}
	}
	w, err := gpu.OpenBackend(gpu.Options{Timeout: timeout, Stderr: stderr, Remote: r}, "fake")
	if err != nil {
		t.Fatalf("Open(remote fake) = %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestRemoteRoundTrip: through a pipe the worker does what it does as a
// child: memory both ways, a kernel, a library's request, a measurement
// with its progress.
func TestRemoteRoundTrip(t *testing.T) {
	w := openRemote(t, helperCommand("1"), time.Minute, nil)
	if got := w.Info().Name; got != "fake GPU" {
		t.Errorf("Info().Name = %q, want %q", got, "fake GPU")
	}
	if !strings.HasPrefix(w.Host(), "the worker (env ") {
		t.Errorf("Host() = %q, want the command named", w.Host())
	}
	n := gpu.PipePiece + 4099 // more than a frame and a pipe piece
	in := make([]byte, n)
	for i := range in {
		in[i] = byte(i*7 + i>>20)
	}
	p, err := w.Alloc(int64(n))
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
	gpu.FillAndCheck(t, w, gpu.FakeKernel(t, w, "fill"), 2.5)
	if got, err := w.Call(gpu.Echo{Text: "abc"}); err != nil || got != "cba" {
		t.Errorf(`Call(gpu.Echo{"abc"}) = %q, %v; want "cba"`, got, err)
	}
	slow := gpu.FakeKernel(t, w, "slow")
	last := 0
	if _, err := w.Bench(gpu.Bench{Ops: [][]gpu.Op{{gpu.Launch{Kernel: slow, Grid: gpu.Dim(1), Block: gpu.Dim(1)}}}, Warmup: 1, Reps: 2,
		Progress: func(done, total int) { last = done }}); err != nil || last != 3 {
		t.Errorf("Bench = %v, progress to %d; want nil, 3", err, last)
	}
	if w.Restarts() != 0 {
		t.Errorf("Restarts() = %d, want 0", w.Restarts())
	}
}

// TestRemoteRecovers: a fault, a killed worker and a hang on the host
// cost one sentence each, the same as for a child, and a fresh worker
// there.
func TestRemoteRecovers(t *testing.T) {
	tests := []struct {
		kernel    string
		limit     time.Duration // the time limit: long, but where the kernel hangs
		wantCause string
	}{
		{"fault", 10 * time.Second, "faulted: CUDA_ERROR_ILLEGAL_ADDRESS"},
		{"crash", 10 * time.Second, "killed the worker (signal: killed)"},
		{"hang", 500 * time.Millisecond, "ran past the 500ms time limit"},
	}
	for _, tt := range tests {
		t.Run(tt.kernel, func(t *testing.T) {
			w := openRemote(t, helperCommand("1"), tt.limit, nil)
			fill := gpu.FakeKernel(t, w, "fill")
			bad := gpu.FakeKernel(t, w, tt.kernel)
			start := time.Now()
			err := w.Launch(gpu.Launch{Kernel: bad, Grid: gpu.Dim(2), Block: gpu.Dim(32)})
			var we *gpu.WorkerError
			if !errors.As(err, &we) {
				t.Fatalf("Launch(%s) = %v, want a *WorkerError", tt.kernel, err)
			}
			want := "gpu: launch " + tt.kernel + " (grid 2x1x1, block 32x1x1) " + tt.wantCause + "; a fresh worker was started"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error = %q\nwant prefix %q", err, want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the failure took %v", d)
			}
			if w.Restarts() != 1 {
				t.Errorf("Restarts() = %d, want 1", w.Restarts())
			}
			gpu.FillAndCheck(t, w, fill, 7)
		})
	}
}

// TestRemoteConnectionLost: the command that carries the pipe (ssh) dies
// during a call, or the host goes silent: the call says the connection
// was lost, later calls say so at once without trying, and after
// Reconnect the next call connects again.
func TestRemoteConnectionLost(t *testing.T) {
	tests := []struct {
		desc    string
		cut     func(pid int) error
		wantWhy string
	}{
		{"the command is killed", func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }, "env ended: signal: killed"},
		{"the host stops answering", func(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }, "no word from it for 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			w := openRemote(t, helperCommand("1"), 20*time.Second, nil, func(r *remote.Transport) { r.Silence = 2 * time.Second })
			slow := gpu.FakeKernel(t, w, "hang")
			pid := w.CommandPID()
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			time.AfterFunc(300*time.Millisecond, func() { tt.cut(pid) })
			start := time.Now()
			err := w.Launch(gpu.Launch{Kernel: slow, Grid: gpu.Dim(1), Block: gpu.Dim(1)})
			var ce *gpu.ConnectionError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "the connection to the worker (env ") ||
				!strings.Contains(err.Error(), "was lost ("+tt.wantWhy+"); the next command connects again") {
				t.Fatalf("Launch during a cut = %v, want the connection lost (%s)", err, tt.wantWhy)
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("the lost connection took %v to report", d)
			}
			start = time.Now()
			if _, _, err := w.MemInfo(); !errors.As(err, &ce) || time.Since(start) > time.Second {
				t.Errorf("MemInfo after the loss = %v after %v, want the same error at once", err, time.Since(start))
			}
			w.Reconnect()
			if free, _, err := w.MemInfo(); err != nil || free != 1<<30 {
				t.Errorf("MemInfo after Reconnect = %d, %v; want a fresh connection to answer", free, err)
			}
			gpu.FillAndCheck(t, w, gpu.FakeKernel(t, w, "fill"), 3)
		})
	}
}

// TestRemoteStartFailures: whatever stands between the client and a
// worker is one sentence, at once, never a wait.
func TestRemoteStartFailures(t *testing.T) {
	here := runtime.GOOS + "/" + runtime.GOARCH
	uname := map[string]string{"linux/amd64": "Linux x86_64", "linux/arm64": "Linux aarch64", "darwin/arm64": "Darwin arm64", "darwin/amd64": "Darwin x86_64"}[here]
	tests := []struct {
		desc    string
		script  string
		want    string
		binary  bool // a *remote.BinaryError
		noGPU   bool
		backend string
	}{
		{"no cudarepl there", "echo cudarepl-host Linux riscv64; echo cudarepl-missing",
			"gpu: the worker (sh -c …) has no cudarepl (looked in ~/.cache/cudarepl/worker-2, on the PATH of a non-interactive shell, in ~/go/bin and in ~/.local/bin): the worker (sh -c …) runs Linux riscv64 and this cudarepl is built for " + here + ": build one for it (GOOS=linux GOARCH=riscv64 CGO_ENABLED=0 go build ./cmd/cudarepl) and copy it to ~/.cache/cudarepl/worker-2/cudarepl there", true, false, ""},
		{"another protocol", "echo cudarepl-worker 0 0.0.9 linux/amd64; cat >/dev/null",
			"gpu: the cudarepl on the worker (sh -c …) (0.0.9) speaks worker protocol 0, and this one speaks 2: install there a cudarepl that speaks worker protocol 2", true, false, ""},
		{"a cudarepl without the worker command", `echo 'cudarepl: unknown command "worker" (try '"'"'cudarepl help'"'"')' >&2; exit 2`,
			"gpu: the cudarepl on the worker (sh -c …) has no worker command (it is older than remote workers): install there", true, false, ""},
		{"no such command", "exec /nonexistent/cudarepl worker",
			"gpu: the worker command for the worker (sh -c …) found no cudarepl to run (sh: 1: exec: /nonexistent/cudarepl: not found)", true, false, ""},
		{"a command that says nothing", "exit 0",
			"gpu: the worker command for the worker (sh -c …) ended before a worker started (exit status 0, and nothing said)", false, false, ""},
		{"a command that fails", "echo 'sorry, no' >&2; exit 1",
			"gpu: the worker command for the worker (sh -c …) ended before a worker started (sorry, no)", false, false, ""},
		{"no GPU there", "echo banner from .bashrc; echo; exec " + helperCommand("fake-nogpu"),
			"gpu: on the worker (sh -c …), no NVIDIA driver found (libcuda.so.1)", false, true, ""},
		{"an unknown backend", "exec " + helperCommand("nope"),
			`gpu: worker: no backend "nope"`, false, false, ""},
	}
	if uname != "" {
		tests = append(tests, struct {
			desc    string
			script  string
			want    string
			binary  bool
			noGPU   bool
			backend string
		}{"no cudarepl there, this system", "echo cudarepl-host " + uname + "; echo cudarepl-missing",
			"gpu: the worker (sh -c …) has no cudarepl (looked in ~/.cache/cudarepl/worker-2, on the PATH of a non-interactive shell, in ~/go/bin and in ~/.local/bin): install there a cudarepl that speaks worker protocol 2 (this one does), where the worker command finds it", true, false, ""})
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			r := &remote.Transport{Name: "the worker (sh -c …)", Argv: []string{"sh", "-c", tt.script}}
			start := time.Now()
			_, err := gpu.OpenBackend(gpu.Options{Timeout: time.Second, Stderr: io.Discard, Remote: r}, "fake")
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Open =\n%v\nwant prefix\n%s", err, tt.want)
			}
			var be *remote.BinaryError
			if errors.As(err, &be) != tt.binary {
				t.Errorf("Open = %T, a *remote.BinaryError: %v, want %v", err, errors.As(err, &be), tt.binary)
			}
			if be != nil && be.Installable {
				t.Errorf("Installable = true for a worker command, which --remote-install cannot reach")
			}
			if errors.Is(err, gpu.ErrNoGPU) != tt.noGPU {
				t.Errorf("errors.Is(err, gpu.ErrNoGPU) = %v, want %v", errors.Is(err, gpu.ErrNoGPU), tt.noGPU)
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("the failure took %v", d)
			}
		})
	}
}

// TestRemoteCompile: a kernel is compiled by the worker's NVRTC, and a
// compile error comes back typed, on the learner's lines (Source.Focus).
func TestRemoteCompile(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("no NVRTC here: %v", err)
	}
	w := openRemote(t, helperCommand("1"), 5*time.Second, nil)
	good := nvrtc.Source{Name: "k.cu", Code: `extern "C" __global__ void k(float *x) { x[threadIdx.x] = 1; }`}
	img, err := w.Compile(good, nvrtc.CompileOptions{Arch: "sm_80", NoCache: true})
	if err != nil || len(img.CUBIN) == 0 || img.Cached {
		t.Fatalf("Compile(good) = %v, %v", img, err)
	}
	if _, ok := img.Kernel("k"); !ok {
		t.Errorf("the image has no report of kernel k: %v", img.Kernels)
	}
	broken := nvrtc.Source{Name: "course.cu", Focus: "mine.cu",
		Code: "extern \"C\" __global__ void ok(float *x) { x[0] = 1; }\n#line 1 \"mine.cu\"\nextern \"C\" __global__ void k(float *x) {\n  x[0] = y;\n}\n"}
	_, err = w.Compile(broken, nvrtc.CompileOptions{Arch: "sm_80", NoCache: true})
	var ce *nvrtc.CompileError
	if !errors.As(err, &ce) || ce.File != "mine.cu" || ce.Line != 2 || !strings.Contains(ce.Msg, `identifier "y" is undefined`) {
		t.Errorf("Compile(broken) = %v, want a *nvrtc.CompileError at mine.cu:2", err)
	}
	if w.Restarts() != 0 {
		t.Errorf("a compile error restarted the worker")
	}
}

// TestRemoteEnvForwarded: what $CUDAREPL_HIDE hides here is hidden
// there, and a missing NVRTC there says where.
func TestRemoteEnvForwarded(t *testing.T) {
	t.Setenv("CUDAREPL_HIDE", "nvrtc")
	w := openRemote(t, helperCommand("1"), 5*time.Second, nil)
	_, err := w.Compile(nvrtc.Source{Name: "k.cu", Code: "x"}, nvrtc.CompileOptions{})
	if !errors.Is(err, gpu.ErrNoGPU) || !strings.HasPrefix(err.Error(), "gpu: on the worker (env ") || !strings.Contains(err.Error(), "NVRTC hidden by CUDAREPL_HIDE=nvrtc") {
		t.Errorf("Compile with NVRTC hidden = %v, want the host's NVRTC hidden, and where", err)
	}
}

// TestRemoteWrapperLogs: a wrapper runs around the worker on its host,
// logs there, and its logs come back, one a worker process, after a
// fault as well.
func TestRemoteWrapperLogs(t *testing.T) {
	wrap := &gpu.Wrapper{Name: "a test wrapper", Argv: []string{"sh", "-c", `echo "wrapped $1" > "$0/w.$1.log"; exec "$2"`, gpu.LogDir, gpu.LogStart}}
	for _, far := range []bool{false, true} {
		t.Run(fmt.Sprintf("remote %v", far), func(t *testing.T) {
			o := gpu.Options{Timeout: 5 * time.Second, Stderr: io.Discard, Wrap: wrap}
			if far {
				o.Remote, _ = remote.Command(helperCommand("1"))
			}
			w, err := gpu.OpenBackend(o, "fake")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Launch(gpu.Launch{Kernel: gpu.FakeKernel(t, w, "fault"), Grid: gpu.Dim(1), Block: gpu.Dim(1)}); err == nil {
				t.Fatal("the fault did not fail")
			}
			gpu.FillAndCheck(t, w, gpu.FakeKernel(t, w, "fill"), 1)
			logs, err := w.WrapperLogs()
			if want := []string{"wrapped 001\n", "wrapped 002\n"}; err != nil || !slices.Equal(logs, want) {
				t.Errorf("WrapperLogs = %q, %v; want %q", logs, err, want)
			}
		})
	}
}

// TestRemoteWrapperMissingThere: a wrapper's program missing on the
// host is one sentence that says so.
func TestRemoteWrapperMissingThere(t *testing.T) {
	r, _ := remote.Command(helperCommand("1"))
	_, err := gpu.OpenBackend(gpu.Options{Timeout: time.Second, Stderr: io.Discard, Remote: r,
		Wrap: &gpu.Wrapper{Name: "compute-sanitizer memcheck", Argv: []string{"/opt/nowhere/compute-sanitizer-for-a-test", "--tool", "memcheck"}}}, "fake")
	if err == nil || !strings.Contains(err.Error(), "start the worker under compute-sanitizer memcheck on ") ||
		!strings.Contains(err.Error(), "compute-sanitizer-for-a-test is not installed there") {
		t.Errorf("Open under a wrapper missing on the host = %v", err)
	}
}

// TestRemoteCloseEndsHost: closing the Worker ends the command and the
// worker behind it.
func TestRemoteCloseEndsHost(t *testing.T) {
	w := openRemote(t, helperCommand("1"), time.Second, nil)
	exited, got, err := w.CloseForTest()
	if err != nil {
		t.Fatal(err)
	}
	if !exited {
		t.Errorf("the command is still running after Close")
	}
	if got != "exit status 0" {
		t.Errorf("the worker there ended with %q, want exit status 0", got)
	}
}

// TestRemoteLatency measures the time of an empty request (MemInfo of
// the fake device) through a child's fds and through a pipe to a worker's
// host end (as ssh carries it, without the network): the median of many,
// taken in turns so that a busy machine weighs on each alike. Through ssh,
// TestRemoteOverSSH measures it too.
func TestRemoteLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	child := gpu.OpenFake(t, 5*time.Second)
	pipe := openRemote(t, helperCommand("1"), 5*time.Second, nil)
	m := medianCalls(t, 2000, child, pipe)
	t.Logf("empty request through a child (fds 3 and 4): median %v", m[0])
	t.Logf("empty request through a pipe (cudarepl worker): median %v", m[1])
}

// medianCalls is the median time of n MemInfo calls to each of ws, the
// calls made in turns.
func medianCalls(t *testing.T, n int, ws ...*gpu.Worker) []time.Duration {
	t.Helper()
	ds := make([][]time.Duration, len(ws))
	for range n {
		for i, w := range ws {
			start := time.Now()
			if _, _, err := w.MemInfo(); err != nil {
				t.Fatal(err)
			}
			ds[i] = append(ds[i], time.Since(start))
		}
	}
	medians := make([]time.Duration, len(ws))
	for i, d := range ds {
		slices.Sort(d)
		medians[i] = d[n/2]
	}
	return medians
}
