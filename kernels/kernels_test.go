package kernels

import (
	"regexp"
	"strings"
	"testing"

	"cudarepl/nvrtc"
)

func TestLadder(t *testing.T) {
	tests := []struct {
		desc    string
		code    string
		want    []string
		wantErr string
	}{
		{"two versions", "// v1: simple\nextern \"C\" __global__ void k1(int n) {}\n// helper\n// v2: faster because\n// it is wider\nextern \"C\" __global__ void __launch_bounds__(256) k2(int n) {}\n",
			[]string{"1 k1 simple", "2 k2 faster because it is wider"}, ""},
		{"no versions", "extern \"C\" __global__ void k(int n) {}\n", nil, ""},
		{"a space before launch bounds' parenthesis", "// v1: a\nextern \"C\" __global__ void __launch_bounds__ (256) k(int n) {}\n// v2: b\n__global__ void CLUSTER_DIMS (8, 1, 1) __launch_bounds__ (1024) k2() {}\n",
			[]string{"1 k a", "2 k2 b"}, ""},
		{"gap", "// v1: a\n__global__ void a() {}\n// v3: c\n__global__ void c() {}\n", nil, "found v3 where v2 was due"},
		{"no kernel", "// v1: a\nint x;\n", nil, "not followed by a __global__ kernel"},
	}
	for _, tt := range tests {
		got, err := Ladder(nvrtc.Source{Name: "t.cu", Code: tt.code})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.desc, err, tt.wantErr)
			}
			continue
		}
		var s []string
		for _, v := range got {
			s = append(s, strings.Join([]string{string(rune('0' + v.N)), v.Name, v.Summary}, " "))
		}
		if strings.Join(s, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: Ladder = %q, want %q (err %v)", tt.desc, s, tt.want, err)
		}
	}
}

// TestEmbeddedFiles checks every shipped file: its ladder parses, every
// version has a summary, and Function finds every kernel.
func TestEmbeddedFiles(t *testing.T) {
	if len(Files()) == 0 {
		t.Fatal("no .cu files embedded")
	}
	for _, f := range Files() {
		src, err := Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Ladder(src); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for _, name := range Names(src) {
			body, err := Function(src, name)
			if err != nil || !strings.Contains(body, name) || !strings.HasSuffix(body, "}") {
				t.Errorf("%s: Function(%s) = %q, %v", f, name, body, err)
			}
		}
	}
}

func TestVectorAddLadder(t *testing.T) {
	src, _ := Source("vector_add.cu")
	vs, err := Ladder(src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	if got := strings.Join(names, " "); got != "vadd_v1 vadd_v2 vadd_v3" {
		t.Errorf("vector_add.cu ladder = %s", got)
	}
	body, _ := Function(src, "vadd_v1")
	if !strings.HasPrefix(body, "// v1: one thread per element") {
		t.Errorf("Function(vadd_v1) does not start with its comment:\n%s", body)
	}
	if _, err := Source("nope.cu"); err == nil || !strings.Contains(err.Error(), "vector_add.cu") {
		t.Errorf("Source(nope.cu) = %v, want an error listing the files", err)
	}
}

// spillsOnPurpose are the kernels that show what spilling costs.
var spillsOnPurpose = map[string]bool{"copy_deep_bounded": true}

// TestCompileAll compiles every shipped file with NVRTC, where it exists,
// and checks that ptxas reported every kernel and that none spills but
// those meant to.
func TestCompileAll(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC: %v", err)
	}
	t.Setenv("CUDAREPL_CACHE", t.TempDir())
	for _, f := range Files() {
		src, _ := Source(f)
		img, err := nvrtc.Compile(src, nvrtc.CompileOptions{})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, name := range Names(src) {
			k, ok := img.Kernel(name)
			if !ok {
				t.Errorf("%s: ptxas reported nothing for %s", f, name)
			} else if spillsOnPurpose[name] && k.SpillStores == 0 {
				t.Errorf("%s: %s is meant to show spilling, but spills nothing", f, name)
			} else if k.SpillStores > 0 && !spillsOnPurpose[name] {
				t.Errorf("%s: %s spills %d bytes", f, name, k.SpillStores)
			}
		}
	}
}

func TestSignatures(t *testing.T) {
	tests := []struct {
		desc, code string
		want       []string // name(params) and "C" for extern "C"
	}{
		{"extern C", `extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {}`,
			[]string{`vadd(const float*, const float*, float*, int) C`}},
		{"C++, names and restrict dropped", "__global__ void vector_add(const float *__restrict__ A, const float* B, float *C, int N) {}",
			[]string{"vector_add(const float*, const float*, float*, int)"}},
		{"launch bounds, const pointer, unsigned", "__global__ void __launch_bounds__(256) k(float* const out, unsigned int n, long long m)",
			[]string{"k(float*, unsigned int, long long)"}},
		{"cluster dims and launch bounds", "extern \"C\" __global__ void CLUSTER_DIMS(8, 1, 1) __launch_bounds__(1024) k(const float* x, int n)",
			[]string{"k(const float*, int) C"}},
		{"a space before launch bounds' parenthesis", "extern \"C\" __global__ void CLUSTER_DIMS (8, 1, 1) __launch_bounds__ (1024) k(const float* x, int n)",
			[]string{"k(const float*, int) C"}},
		{"extern C block and a comment", "extern \"C\" {\n// __global__ void commented(int x)\n__global__ void a(int n) {}\n}\n__global__ void b() {}",
			[]string{"a(int) C", "b()"}},
		{"template left out", "template <int T>\n__global__ void t(float* x) {}\n__global__ void u(float* x) {}",
			[]string{"u(float*)"}},
		{"a half type", "#include <cuda_fp16.h>\n__global__ void h(const __half* x, __half* y, int n) {}",
			[]string{"h(const __half*, __half*, int)"}},
	}
	for _, tt := range tests {
		var got []string
		for _, s := range Signatures(nvrtc.Source{Name: "t.cu", Code: tt.code}) {
			g := s.String()
			if s.ExternC {
				g += " C"
			}
			got = append(got, g)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: Signatures = %q, want %q", tt.desc, got, tt.want)
		}
	}
}

// TestFunctionFindsDeviceFunctions: a step can show the __device__
// function a kernel hands its work to, with its template line, and a
// helper of the course header it calls.
func TestFunctionFindsDeviceFunctions(t *testing.T) {
	src, err := Source("matmul_tc.cu")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, prefix, has string }{
		{"tc_v3", "// tc_v3 is matmul_tc_v3", "template <bool BF16>"},
		{"mbar_wait", "// mbar_wait spins until", "mbarrier.try_wait"},
		{"smem32", "// smem32 is the 32-bit shared-memory address", "cvta.to.shared"},
	}
	for _, tt := range tests {
		body, err := Function(src, tt.name)
		if err != nil || !strings.HasPrefix(body, tt.prefix) || !strings.Contains(body, tt.has) || !strings.HasSuffix(body, "}") {
			t.Errorf("Function(%s) = %.200q…, %v", tt.name, body, err)
		}
	}
	if _, err := Function(src, "nope"); err == nil || !strings.Contains(err.Error(), `kernels/matmul_tc.cu has no kernel "nope"`) {
		t.Errorf("Function(nope) = %v", err)
	}
}

// definition is a __device__ function's definition or a macro's: the
// name is group 1 or 2.
var definition = regexp.MustCompile(`(?m)__device__[^;{(=]*\b(\w+)\s*\(|^#define (\w+)`)

// TestHelpersWrittenOnce: no kernel file defines a helper, or a macro,
// of the course header again; it includes the header instead.
func TestHelpersWrittenOnce(t *testing.T) {
	shared := map[string]bool{}
	for _, m := range definition.FindAllStringSubmatch(header, -1) {
		shared[m[1]+m[2]] = true
	}
	if !shared["mbar_wait"] || !shared["h2f"] || !shared["NEG_INF"] {
		t.Fatalf("the header's helpers were not found: %v", shared)
	}
	for _, f := range Files() {
		src, _ := Source(f)
		for _, m := range definition.FindAllStringSubmatch(src.Code, -1) {
			if name := m[1] + m[2]; shared[name] {
				t.Errorf("%s defines %s, which %s has", f, name, Header)
			}
		}
	}
}

// TestSummary: the comment above a kernel, in one line; an error for a
// kernel the source lacks.
func TestSummary(t *testing.T) {
	src := nvrtc.Source{Name: "k.cu", Code: "// first line\n// and the second.\nextern \"C\" __global__ void k(int* x) {}\n\nextern \"C\" __global__ void bare(int* x) {}\n"}
	for _, c := range []struct{ name, want string }{
		{"k", "first line and the second."},
		{"bare", ""},
	} {
		if got, err := Summary(src, c.name); err != nil || got != c.want {
			t.Errorf("Summary(%s) = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := Summary(src, "none"); err == nil {
		t.Errorf("Summary(none) gave no error")
	}
}
