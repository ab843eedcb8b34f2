package lessons

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"cudarepl/gpu/profiler"
	"cudarepl/kernels"
	"cudarepl/nvrtc"
)

// TestTileCode: a kernel that is one call to a __device__ function of its
// file shows and edits with that function and what it calls, nearest
// first; a kernel that does its own work, and a __device__ function asked
// for by name, have no tile code.
func TestTileCode(t *testing.T) {
	tests := []struct {
		desc, file, name string
		first            string   // "" for none
		has              []string // further functions it must hold
	}{
		{"a wrapper around a template", "flash_attention.cu", "flash_v2", "flash_v2_tile", []string{"online_softmax", "frag_v", "ldsm4t", "lds16x2", "exp2_approx"}},
		{"a step sharing that template", "flash_attention.cu", "flash_v2a_mma", "flash_v2_tile", []string{"copy_rows"}},
		{"a wrapper inside #if", "flash_attention.cu", "flash_v3", "flash_v3_tile", []string{"v3_scores", "wgmma_ss", "online_softmax", "bar_arrive"}},
		{"lesson 5's wrapper", "matmul_tc.cu", "matmul_tc_v3", "tc_v3", []string{"wgmma64x256"}},
		{"a kernel doing its own work", "flash_attention.cu", "flash_v1", "", nil},
		{"a kernel calling helpers among its statements", "softmax.cu", "softmax_v3", "", nil},
		{"a __device__ function by name", "flash_attention.cu", "online_softmax", "", nil},
	}
	for _, tt := range tests {
		src, err := kernels.Source(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tileCode(src, tt.name)
		switch {
		case err != nil:
			t.Errorf("%s: tileCode(%s) = %v", tt.desc, tt.name, err)
		case tt.first == "" && len(got) > 0:
			t.Errorf("%s: tileCode(%s) = %q, want none", tt.desc, tt.name, got)
		case tt.first != "" && (len(got) == 0 || got[0] != tt.first):
			t.Errorf("%s: tileCode(%s) = %q, want %s first", tt.desc, tt.name, got, tt.first)
		}
		for _, h := range tt.has {
			if strings.Count(strings.Join(got, " ")+" ", h+" ") != 1 {
				t.Errorf("%s: tileCode(%s) = %q, want %s in it once", tt.desc, tt.name, got, h)
			}
		}
		for _, h := range []string{"smem32", "mma16816", "pack2"} { // the course header's: not the file's
			if strings.Contains(" "+strings.Join(got, " ")+" ", " "+h+" ") {
				t.Errorf("%s: tileCode(%s) = %q holds %s, a helper of the course header", tt.desc, tt.name, got, h)
			}
		}
	}
}

// TestKernelTextHoldsTileCode: what a learner reads and edits of flash_v2
// is the kernel with its comment, then the tile code with theirs.
func TestKernelTextHoldsTileCode(t *testing.T) {
	src, _ := kernels.Source("flash_attention.cu")
	text, err := kernelText(src, "flash_v2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"// v2: fp16 on the tensor cores", "__device__ __forceinline__ void flash_v2_tile(", "// online_softmax is",
		"static __device__ __forceinline__ void online_softmax(", "template <int D, int MT, bool LDSM, bool ASYNC, bool ONES>"} {
		if !strings.Contains(text, want) {
			t.Errorf("kernelText(flash_v2) lacks %q", want)
		}
	}
	if !strings.HasPrefix(text, "// v2:") || strings.Contains(text, "flash_v3_tile") || strings.Contains(text, "flash_v1(") {
		t.Errorf("kernelText(flash_v2) = %.300q…, want the kernel first and nothing it does not call", text)
	}
	one, _ := kernelText(src, "flash_v1")
	if fn, _ := kernels.Function(src, "flash_v1"); one != fn {
		t.Errorf("kernelText(flash_v1) is not its function alone")
	}
}

// TestEditedSplicesTileCode: a learner's edit of a kernel's text puts each
// function of theirs where the course's stands, keeps the course's where
// they left one out, puts a helper of their own before the first, and
// leaves everything else of the file as it was.
func TestEditedSplicesTileCode(t *testing.T) {
	src, _ := kernels.Source("flash_attention.cu")
	text, _ := kernelText(src, "flash_v2")
	const courseLine = "base[h] = mx[h] == NEG_INF ? 0.0f : mx[h];"
	const theirLine = "base[h] = mx[h] == NEG_INF ? 0.0f : mx[h] + mine(0.0f);"
	if !strings.Contains(text, courseLine) {
		t.Fatalf("flash_v2's text has no %q to change", courseLine)
	}
	helper := "// mine is a helper of the learner's.\nstatic __device__ float mine(float x) { return x; }"
	storeRows, _ := kernels.Function(src, "store_rows")
	code := helper + "\n\n" + strings.Replace(strings.Replace(text, courseLine, theirLine, 1), storeRows, "", 1)
	out, changed := edited(src, "flash_v2", code, "mine.cu")
	if !changed {
		t.Fatal("edited = unchanged, want the learner's code in")
	}
	tests := []struct {
		desc, s string
		want    int
	}{
		{"their line", theirLine, 1},
		{"the course's line", courseLine, 0},
		{"online_softmax defined", "void online_softmax(", 1},
		{"store_rows, left out of theirs, defined", "void store_rows(", 1},
		{"their helper", "static __device__ float mine(", 1},
		{"flash_v3's tile code, untouched", "void flash_v3_tile(", 1},
		{"flash_v2", "flash_v2(const unsigned short* Q", 1},
	}
	for _, tt := range tests {
		if got := strings.Count(out, tt.s); got != tt.want {
			t.Errorf("%s: %q appears %d times in the edited file, want %d", tt.desc, tt.s, got, tt.want)
		}
	}
	if strings.Index(out, "float mine(") > strings.Index(out, "float exp2_approx(") {
		t.Errorf("their helper comes after the first function of the tile code that may call it")
	}
	if out, changed := edited(src, "flash_v2", "\n"+text+"\n", "mine.cu"); changed || out != src.Code {
		t.Errorf("edited(the course's text) changed the file")
	}
	if _, err := nvrtc.Version(); err == nil {
		yours := src
		yours.Code = out
		if _, err := nvrtc.Compile(yours, nvrtc.CompileOptions{NoCache: true}); err != nil {
			t.Errorf("the edited file does not compile: %v", err)
		}
	}
}

// TestEditedLines: an error on a line the learner wrote is reported on
// that line of their file, whether the kernel stands alone or hands its
// work to tile code of the course's file, and the course's own warnings
// are not shown.
func TestEditedLines(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	for _, c := range []struct{ file, kernel string }{
		{"vector_add.cu", "vadd_v1"},
		{"flash_attention.cu", "flash_v2"},
	} {
		src, _ := kernels.Source(c.file)
		src.Headers = kernels.Headers()
		text, err := kernelText(src, c.kernel)
		if err != nil {
			t.Fatal(err)
		}
		// Break the line after the kernel's opening brace: a missing ")".
		lines := strings.Split(text, "\n")
		open := slices.IndexFunc(lines, func(s string) bool { return strings.Contains(s, c.kernel+"(") })
		for !strings.HasSuffix(strings.TrimSpace(lines[open]), "{") {
			open++
		}
		lines = slices.Insert(lines, open+1, "    int broken = (1;")
		yours := Edit{Kernel: c.kernel, Code: strings.Join(lines, "\n"), File: "mine.cu"}.in(src)
		_, err = nvrtc.Compile(yours, nvrtc.CompileOptions{NoCache: true})
		var ce *nvrtc.CompileError
		if !errors.As(err, &ce) {
			t.Fatalf("%s with a broken line compiled: %v", c.kernel, err)
		}
		if ce.File != "mine.cu" || ce.Line != open+2 || strings.Contains(ce.Log, c.file) {
			t.Errorf("%s: error at %s:%d, want mine.cu:%d, and nothing of %s:\n%s", c.kernel, ce.File, ce.Line, open+2, c.file, ce.Log)
		}
	}
}

// TestShowKernelTileCodeOnce: a step that shows two kernels sharing tile
// code prints it once, under the first, and says so under the second.
func TestShowKernelTileCodeOnce(t *testing.T) {
	l, err := build(Def{Slug: "x", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := Replay(nil, View{Out: &out})
	if err := (&ShowKernel{File: "flash_attention.cu", Names: []string{"flash_v2c_async", "flash_v2", "flash_v2_tile"}}).Do(env, l, "A"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"__device__ __forceinline__ void flash_v2_tile(", 1},
		{"void online_softmax(", 1},
		{"flash_v2c_async hands its work to flash_v2_tile, in kernels/flash_attention.cu", 1},
		{"flash_v2 hands its work to flash_v2_tile, shown above.", 1},
		{"extern \"C\" __global__ void __launch_bounds__(128) flash_v2(", 1},
	} {
		if n := strings.Count(got, tt.s); n != tt.want {
			t.Errorf("%q is printed %d times, want %d:\n%s", tt.s, n, tt.want, got)
		}
	}
}

// TestHopperKernelsSaySoOnce: a kernel whose body needs sm_90a, where the
// session compiles for sm_90, shows what NVRTC makes of it for sm_90a
// where this NVRTC can; else it is left out, with what would compile it
// said in full once a session and in one line after; and beside either,
// the registers Nsight Compute recorded of it with the lesson.
func TestHopperKernelsSaySoOnce(t *testing.T) {
	v, err := nvrtc.Version()
	if err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	l, err := build(Def{Slug: "x", Kernels: "flash_attention.cu", Files: fstest.MapFS{"lesson.md": {Data: []byte("# T\n\n## A\n\ntext\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	l.recorded.Results = []Result{{Kind: "profile", Variant: "flash_v3", GPU: "NVIDIA H100 80GB HBM3", Date: "2026-11-25",
		Kernels: []profiler.Kernel{{Name: "flash_v3", Metrics: map[string]float64{profiler.Registers: 128, profiler.SharedPerBlock: 125008}}}}}
	var out bytes.Buffer
	env := Replay(nil, View{Out: &out})
	if err := (&ShowKernel{Names: []string{"flash_v3"}}).Do(env, l, "A"); err != nil {
		t.Fatal(err)
	}
	if err := compileOnly(env, l, &Problem{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := compileOnly(env, l, &Problem{}, nil); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	recorded := "on the NVIDIA H100 80GB HBM3 (2026-11-25), Nsight Compute saw 128 registers/thread and 125008 B of shared memory a block"
	want := []struct {
		s string
		n int
	}{
		{"  ↳ " + recorded + "\n", 1},
		{"flash_v3            left out: needs sm_90a; " + recorded + "\n", 2},
	}
	if canCompile("sm_90a", v) {
		want = append(want, struct {
			s string
			n int
		}{", sm_90a)\n", 5}, struct {
			s string
			n int
		}{"cannot compile", 0})
	} else {
		want = append(want, []struct {
			s string
			n int
		}{
			{"  ↳ left out when compiled for sm_90: its body needs sm_90a\n", 1},
			{"flash_v3 needs sm_90a (a Hopper GPU, compute capability 9.0, and NVRTC 12 or newer); NVRTC " + v + " cannot compile for it", 1},
			{"NVRTC 12 or newer compiles it without a GPU", 1}, // the full hint, once
			{"NVRTC 12 or newer compiles them without a GPU", 0},
			{"(flash_v3 and flash_v3_d128 need sm_90a, which NVRTC " + v + " cannot compile for.)\n", 2},
		}...)
	}
	for _, w := range want {
		if n := strings.Count(got, w.s); n != w.n {
			t.Errorf("%q is printed %d times, want %d:\n%s", w.s, n, w.n, got)
		}
	}
}
