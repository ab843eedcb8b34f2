package nvrtc

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestCacheKey(t *testing.T) {
	src := Source{Name: "a.cu", Code: "x"}
	base := cacheKey("11.8", []string{"--gpu-architecture=sm_90"}, src)
	tests := []struct {
		desc string
		key  string
	}{
		{"nvrtc version", cacheKey("13.0", []string{"--gpu-architecture=sm_90"}, src)},
		{"arch", cacheKey("11.8", []string{"--gpu-architecture=sm_80"}, src)},
		{"extra option", cacheKey("11.8", []string{"--gpu-architecture=sm_90", "-DX"}, src)},
		{"source", cacheKey("11.8", []string{"--gpu-architecture=sm_90"}, Source{Name: "a.cu", Code: "y"})},
		{"name", cacheKey("11.8", []string{"--gpu-architecture=sm_90"}, Source{Name: "b.cu", Code: "x"})},
		{"header", cacheKey("11.8", []string{"--gpu-architecture=sm_90"}, Source{Name: "a.cu", Code: "x", Headers: map[string]string{"h.cuh": ""}})},
		{"header text", cacheKey("11.8", []string{"--gpu-architecture=sm_90"}, Source{Name: "a.cu", Code: "x", Headers: map[string]string{"h.cuh": "y"}})},
		// Joining without lengths would make these two collide.
		{"boundary", cacheKey("11.8", []string{"--gpu-architecture=sm_90"}, Source{Name: "a.cux", Code: ""})},
	}
	for _, tt := range tests {
		if tt.key == base {
			t.Errorf("changing the %s did not change the cache key", tt.desc)
		}
	}
	if again := cacheKey("11.8", []string{"--gpu-architecture=sm_90"}, src); again != base {
		t.Errorf("cache key is not stable: %s then %s", base, again)
	}
}

func TestCompileFlags(t *testing.T) {
	got := strings.Join(compileFlags(CompileOptions{Defines: []string{"TILE=32"}, Flags: []string{"--use_fast_math"}}), " ")
	want := "--gpu-architecture=sm_90 --std=c++17 --ptxas-options=-v "
	for _, d := range IncludeDirs() {
		want += "--include-path=" + d + " "
	}
	want += "-DTILE=32 --use_fast_math"
	if got != want {
		t.Errorf("compileFlags = %q, want %q", got, want)
	}
}

func TestParsePtxasLog(t *testing.T) {
	log := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'tiled' for 'sm_90'
ptxas info    : Function properties for tiled
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'naive' for 'sm_90'
ptxas info    : Function properties for naive
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 380 bytes cmem[0]`
	got := parsePtxasLog(log)
	want := []KernelResources{
		{Name: "tiled", Registers: 40, SharedStatic: 8192, StackFrame: 16, SpillStores: 8, SpillLoads: 12},
		{Name: "naive", Registers: 12},
	}
	if len(got) != len(want) {
		t.Fatalf("parsePtxasLog = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("kernel %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestCompileErrorLine(t *testing.T) {
	log := "k.cu(7): warning #177-D: variable \"z\" was declared but never referenced\nk.cu(12): error: identifier \"y\" is undefined\n\n1 error detected in the compilation of \"k.cu\"."
	e := newCompileError("k.cu", log, nil)
	if e.Line != 12 || e.Msg != `identifier "y" is undefined` {
		t.Errorf("newCompileError: line %d msg %q, want 12 %q", e.Line, e.Msg, `identifier "y" is undefined`)
	}
	if !strings.HasPrefix(e.Error(), "gpu: nvrtc: k.cu:12: identifier \"y\" is undefined\n") {
		t.Errorf("Error() = %q", e.Error())
	}
}

// needNVRTC skips where libnvrtc is missing.
func needNVRTC(t *testing.T) {
	t.Helper()
	if _, err := Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
}

const vaddSource = `extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) c[i] = a[i] + b[i];
}
`

func TestCompileWithNVRTC(t *testing.T) {
	needNVRTC(t)
	t.Setenv("CUDAREPL_CACHE", t.TempDir())
	src := Source{Name: "vadd.cu", Code: vaddSource}
	img, err := Compile(src, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img.Cached || len(img.CUBIN) == 0 || img.Arch != "sm_90" {
		t.Errorf("first compile: cached %v, %d bytes, arch %s", img.Cached, len(img.CUBIN), img.Arch)
	}
	k, ok := img.Kernel("vadd")
	if !ok || k.Registers <= 0 || k.SpillStores != 0 {
		t.Errorf("resources of vadd = %+v, %v; want registers > 0 and no spills", k, ok)
	}
	again, err := Compile(src, CompileOptions{})
	if err != nil || !again.Cached || string(again.CUBIN) != string(img.CUBIN) || again.Key != img.Key {
		t.Errorf("second compile: err %v cached %v same bytes %v", err, again.Cached, string(again.CUBIN) == string(img.CUBIN))
	}
	if _, ok := again.Kernel("vadd"); !ok {
		t.Errorf("cached image lost its resources: %+v", again.Kernels)
	}
}

func TestCompileErrorWithNVRTC(t *testing.T) {
	needNVRTC(t)
	t.Setenv("CUDAREPL_CACHE", t.TempDir())
	code := "extern \"C\" __global__ void broken(float* x) {\n\tint i = threadIdx.x;\n\tx[i] = y;\n}\n"
	_, err := Compile(Source{Name: "broken.cu", Code: code}, CompileOptions{})
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Compile(broken) = %v, want a *CompileError", err)
	}
	if ce.Line != 3 || !strings.Contains(ce.Msg, `"y" is undefined`) {
		t.Errorf("compile error at line %d: %q; want line 3, y undefined", ce.Line, ce.Msg)
	}
	if !strings.HasPrefix(err.Error(), "gpu: nvrtc: broken.cu:3: ") {
		t.Errorf("Error() = %q", err)
	}
	entries, _ := os.ReadDir(os.Getenv("CUDAREPL_CACHE"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cubin") {
			t.Errorf("a failed compile left %s in the cache", e.Name())
		}
	}
}

// TestCompileKeepsGoSignalHandlers: after NVRTC has run in this process, a
// SIGINT must still reach signal.Notify instead of crashing the runtime.
func TestCompileKeepsGoSignalHandlers(t *testing.T) {
	needNVRTC(t)
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no SIGINT to send oneself, and no signal handlers for NVRTC to replace")
	}
	t.Setenv("CUDAREPL_CACHE", t.TempDir())
	if _, err := Compile(Source{Name: "vadd.cu", Code: vaddSource}, CompileOptions{NoCache: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(Source{Name: "bad.cu", Code: "extern \"C\" __global__ void k() { x; }"}, CompileOptions{NoCache: true}); err == nil {
		t.Fatal("a broken kernel compiled")
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	defer signal.Stop(c)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Signal(os.Interrupt)
	}
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT never arrived")
	}
}

// TestCompileToolkitHeader: a kernel that includes a toolkit header
// compiles where the toolkit's headers are found, and otherwise fails with
// a hint that names the header and how to get it.
func TestCompileToolkitHeader(t *testing.T) {
	if _, err := Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	src := Source{Name: "half.cu", Code: `#include <cuda_fp16.h>
extern "C" __global__ void halve(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hmul(x[i], __float2half(0.5f));
}`}
	img, err := Compile(src, CompileOptions{NoCache: true})
	if len(IncludeDirs()) > 0 {
		if err != nil {
			t.Fatalf("with headers in %v: %v", IncludeDirs(), err)
		}
		if _, ok := img.Kernel("halve"); !ok {
			t.Errorf("halve missing from %+v", img.Kernels)
		}
		return
	}
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Hint, "cuda_fp16.h is a CUDA toolkit header") || !strings.Contains(ce.Hint, "CUDA_PATH") {
		t.Fatalf("without headers: %v, want a compile error with a hint naming cuda_fp16.h and CUDA_PATH", err)
	}
	t.Logf("no toolkit headers here: %s", ce.Hint)
}

// TestCompileHeaderByName: a header handed over with the source is found
// by its include name, with no file behind it, and is part of the cache key.
func TestCompileHeaderByName(t *testing.T) {
	needNVRTC(t)
	t.Setenv("CUDAREPL_CACHE", t.TempDir())
	code := "#include \"twice.cuh\"\nextern \"C\" __global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n"
	_, err := Compile(Source{Name: "k.cu", Code: code}, CompileOptions{})
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "twice.cuh") {
		t.Fatalf("without the header: %v, want a compile error naming twice.cuh", err)
	}
	for _, body := range []string{"return 2 * x;", "return x + x;"} {
		hdr := map[string]string{"twice.cuh": "static __device__ float twice(float x) { " + body + " }\n"}
		img, err := Compile(Source{Name: "k.cu", Code: code, Headers: hdr}, CompileOptions{})
		if err != nil {
			t.Fatalf("with the header: %v", err)
		}
		if _, ok := img.Kernel("k"); !ok || img.Cached {
			t.Errorf("header %q: cached %v, kernels %+v", body, img.Cached, img.Kernels)
		}
	}
}

// TestCompileCPlusPlusKernel: a kernel without extern "C" is found by the
// name its source gives it, through NVRTC's name expressions, from a
// fresh compile and from the disk cache alike.
func TestCompileCPlusPlusKernel(t *testing.T) {
	if _, err := Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	t.Setenv("CUDAREPL_CACHE", t.TempDir())
	src := Source{Name: "mine.cu", Code: `__global__ void vector_add(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}`}
	for _, pass := range []string{"compiled", "cached"} {
		img, err := Compile(src, CompileOptions{Names: []string{"vector_add"}})
		if err != nil {
			t.Fatal(err)
		}
		if img.Cached != (pass == "cached") {
			t.Errorf("%s: Cached = %v", pass, img.Cached)
		}
		if sym := img.Symbol("vector_add"); sym != "_Z10vector_addPKfS0_Pfi" {
			t.Errorf("%s: Symbol(vector_add) = %q, want the mangled name", pass, sym)
		}
		if k, ok := img.Kernel("vector_add"); !ok || k.Name != "vector_add" || k.Registers == 0 {
			t.Errorf("%s: Kernel(vector_add) = %+v, %v", pass, k, ok)
		}
	}
}

// TestCompileErrorFocus: a learner's lines spliced into a course file by
// #line directives keep their own file name and numbers; the course's
// diagnostics and every warning are left out; where the learner's lines
// have no error, the errors elsewhere are kept.
func TestCompileErrorFocus(t *testing.T) {
	log := strings.Join([]string{
		`course.cu(40): warning #177-D: variable "z" was declared but never referenced`,
		`      int z;`,
		`          ^`,
		``,
		`mine.cu(3): error: expected a ")"`,
		`      foo(1;`,
		`           ^`,
		``,
		`mine.cu(5): warning #550-D: variable "w" was set but never used`,
		``,
		`course.cu(339): error: identifier "tile" is undefined`,
		``,
		`2 errors detected in the compilation of "softmax_yours.cu".`,
	}, "\n")
	e := newCompileError("softmax_yours.cu", log, nil).focus("mine.cu")
	if e.File != "mine.cu" || e.Line != 3 || e.Msg != `expected a ")"` {
		t.Errorf("focus: %s:%d %q, want mine.cu:3 %q", e.File, e.Line, e.Msg, `expected a ")"`)
	}
	if strings.Contains(e.Log, "course.cu") || !strings.Contains(e.Log, "foo(1;") || strings.Contains(e.Log, "warning") {
		t.Errorf("focus kept the wrong diagnostics:\n%s", e.Log)
	}
	other := newCompileError("softmax_yours.cu", log, nil).focus("yours.cu")
	if other.File != "softmax_yours.cu" || other.Line != 3 || strings.Contains(other.Log, "warning") || !strings.Contains(other.Log, "course.cu(339)") {
		t.Errorf("focus on a file with no diagnostics: %s:%d\n%s", other.File, other.Line, other.Log)
	}
}

// TestCompileFocusWithNVRTC: NVRTC itself names a line set by #line.
func TestCompileFocusWithNVRTC(t *testing.T) {
	needNVRTC(t)
	code := "__device__ int helper() { return 1; }\n#line 1 \"mine.cu\"\nextern \"C\" __global__ void k(int* x) {\n  x[0] = helper(;\n}\n#line 4 \"course.cu\"\n"
	_, err := Compile(Source{Name: "k_yours.cu", Code: code, Focus: "mine.cu"}, CompileOptions{NoCache: true})
	var ce *CompileError
	if !errors.As(err, &ce) || ce.File != "mine.cu" || ce.Line != 2 {
		t.Fatalf("Compile with #line = %v, want an error at mine.cu:2", err)
	}
	if !strings.HasPrefix(ce.Error(), "gpu: nvrtc: mine.cu:2: ") {
		t.Errorf("Error() = %q", ce.Error())
	}
}
