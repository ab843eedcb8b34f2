package fuse

import (
	"errors"
	"math"
	"strings"
	"testing"

	"cudarepl/nvrtc"
)

func TestParseEval(t *testing.T) {
	for _, tc := range []struct {
		src    string
		inputs string
		x      []float64
		want   float64
		ops    int
	}{
		{"sigmoid(a + b*c)", "a,b,c", []float64{0.5, 2, -1}, 1 / (1 + math.Exp(1.5)), 3},
		{"a*b + c", "a,b,c", []float64{2, 3, 4}, 10, 2},
		{"a - b - c", "a,b,c", []float64{10, 3, 2}, 5, 2}, // left to right
		{"a / b / c", "a,b,c", []float64{12, 3, 2}, 2, 2}, // left to right
		{"-a*-b", "a,b", []float64{2, 3}, 6, 3},           // unary minus binds tighter
		{"2*(x + 1.5e1)", "x", []float64{1}, 32, 2},       // numbers with exponents
		{" relu( x ) + max(x, y)*0.5 ", "x,y", []float64{-4, 2}, 1, 4},
		{"a*a + a", "a", []float64{3}, 12, 2}, // an input named twice is read once
		{"exp(log(sqrt(z*z)))", "z", []float64{-2}, 2, 4},
		{"pow(n, 2) + tanh(out) + abs(i)", "n,out,i", []float64{3, 0, -1}, 10, 5}, // C's names are fine as inputs
	} {
		e, err := Parse(tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		if got := strings.Join(e.Inputs(), ","); got != tc.inputs {
			t.Errorf("Parse(%q).Inputs() = %s, want %s", tc.src, got, tc.inputs)
		}
		if got := e.Eval(tc.x); math.Abs(got-tc.want) > 1e-12*math.Max(1, math.Abs(tc.want)) {
			t.Errorf("Parse(%q).Eval(%v) = %v, want %v", tc.src, tc.x, got, tc.want)
		}
		if got := e.Ops(); got != tc.ops {
			t.Errorf("Parse(%q).Ops() = %d, want %d", tc.src, got, tc.ops)
		}
		if got, want := e.BytesPerElement(), 4*(len(e.Inputs())+1); got != want {
			t.Errorf("Parse(%q).BytesPerElement() = %d, want %d", tc.src, got, want)
		}
	}
}

// TestParseErrors: each mistake is named, with the column it is at.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src string
		col int
		msg string
	}{
		{"", 1, "the expression is empty"},
		{"sigmod(a)", 1, `unknown function "sigmod" (there are abs, cos, exp, log, max, min, pow, relu, sigmoid, sin, sqrt, tanh)`},
		{"a + ", 5, "the expression ends where a value is due"},
		{"a + * b", 5, `unexpected "*" where a value is due`},
		{"(a + b", 7, "a ')' is due here"},
		{"a b", 3, `unexpected "b" after a complete expression`},
		{"max(a)", 1, "max takes 2 arguments, not 1"},
		{"exp(a, b)", 1, "exp takes 1 argument, not 2"},
		{"exp + 1", 1, "exp is a function: call it, as exp(x)"},
		{"a # b", 3, `unexpected "#" after a complete expression`},
		{"1.2.3 * a", 1, `"1.2.3" is not a number an fp32 kernel can hold`},
		{"a * 1e39", 5, `"1e39" is not a number an fp32 kernel can hold`},
		{"a + b + c + d + e + f + g + h + k", 33, "k would be input 9; 8 is the most"},
		{"sin(a ; b)", 7, "a ')' or ',' is due here, in the call of sin"},
		{strings.Repeat("-", 70) + "a", 65, "nested more than 64 deep"},
		{strings.Repeat("a+", 200) + "a", 401, "the expression is 401 characters long; 400 is the most"},
	} {
		_, err := Parse(tc.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", tc.src, err)
			continue
		}
		if se.Col != tc.col || !strings.HasPrefix(se.Msg, tc.msg) {
			t.Errorf("Parse(%q): column %d %q, want column %d %q", tc.src, se.Col, se.Msg, tc.col, tc.msg)
		}
		if strings.Contains(se.Error(), "\n") {
			t.Errorf("Parse(%q): the error runs over lines: %q", tc.src, se.Error())
		}
	}
}

func TestKernelSource(t *testing.T) {
	e, err := Parse("sigmoid(a + b*c) * 2")
	if err != nil {
		t.Fatal(err)
	}
	src := e.Kernel("fused")
	for _, want := range []string{
		`extern "C" __global__ void fused(const float* __restrict__ x0 /* a */, const float* __restrict__ x1 /* b */, const float* __restrict__ x2 /* c */, float* __restrict__ out, long long n)`,
		"float v2 = x2[i];",
		"out[i] = ((1.0f / (1.0f + expf(-((v0 + (v1 * v2)))))) * 2.0f);",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("Kernel lacks %q:\n%s", want, src)
		}
	}
	for v, want := range map[float64]string{2: "2.0f", 0.5: "0.5f", 1e-5: "1e-05f", 3e20: "3e+20f", 0.1: "0.1f"} {
		if got := cudaFloat(v); got != want {
			t.Errorf("cudaFloat(%v) = %s, want %s", v, got, want)
		}
	}
}

// TestKernelCompiles: NVRTC accepts what Kernel and Unfused write, for an
// expression that calls every function.
func TestKernelCompiles(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skipf("needs NVRTC (Debian: apt-get install libnvrtc11.2 from non-free): %v", err)
	}
	var calls []string
	for _, f := range Functions() {
		if functions[f].arity == 2 {
			calls = append(calls, f+"(a, b)")
		} else {
			calls = append(calls, f+"(a)")
		}
	}
	e, err := Parse(strings.Join(calls, " + ") + " - -1.5 / b")
	if err != nil {
		t.Fatal(err)
	}
	unfused, stages := e.Unfused("step")
	img, err := nvrtc.Compile(nvrtc.Source{Name: "fused.cu", Code: e.Kernel("fused") + unfused}, nvrtc.CompileOptions{NoCache: true})
	if err != nil {
		t.Fatalf("%v\n%s%s", err, e.Kernel("fused"), unfused)
	}
	for _, name := range append([]string{"fused"}, stages[0].Kernel, stages[len(stages)-1].Kernel) {
		if _, ok := img.Kernel(name); !ok {
			t.Errorf("the image has no kernel %s; log:\n%s", name, img.Log)
		}
	}
}

// FuzzParse: whatever is typed, Parse returns an expression or a
// SyntaxError, never panics, and an expression evaluates.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"sigmoid(a + b*c)", "max(a,", "((((", "-", "1e", "é + a", "a*b/c-d", "pow(a, -b)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, not a SyntaxError", src, err)
			}
			return
		}
		e.Eval(make([]float64, len(e.Inputs())))
		if !strings.Contains(e.Kernel("k"), "out[i] = ") {
			t.Fatalf("Parse(%q).Kernel has no store", src)
		}
		if _, stages := e.Unfused("u"); len(stages) == 0 || stages[len(stages)-1].Writes != "out" {
			t.Fatalf("Parse(%q).Unfused = %+v", src, stages)
		}
	})
}

func TestUnfused(t *testing.T) {
	for _, tc := range []struct {
		src    string
		stages string // kernel op reads → writes, ;-separated
		bytes  int    // per element, all stages
		code   []string
	}{
		{"sigmoid(a + b*c)", "u0 * x1,x2 → t0; u1 + x0,t0 → t1; u2 sigmoid t1 → out", 32,
			[]string{"out[i] = (p0[i] * p1[i]);", "out[i] = (1.0f / (1.0f + expf(-(p0[i]))));"}},
		{"(2+3)*a", "u0 * x0 → out", 8, []string{"out[i] = (5.0f * p0[i]);"}},
		{"a", "u0 copy x0 → out", 8, []string{"out[i] = p0[i];"}},
		{"a*a - max(b, 0.5)", "u0 * x0,x0 → t0; u1 max x1 → t1; u2 - t0,t1 → out", 32, []string{"out[i] = fmaxf(p0[i], 0.5f);"}},
	} {
		e, err := Parse(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		src, stages := e.Unfused("u")
		var got []string
		for _, s := range stages {
			got = append(got, s.Kernel+" "+s.Op+" "+strings.Join(s.Reads, ",")+" → "+s.Writes)
		}
		bytes := StagesBytes(stages)
		if strings.Join(got, "; ") != tc.stages || bytes != tc.bytes {
			t.Errorf("%s: stages %q, %d bytes; want %q, %d", tc.src, strings.Join(got, "; "), bytes, tc.stages, tc.bytes)
		}
		if e.Ops() != len(stages) && tc.src != "a" {
			t.Errorf("%s: Ops() = %d for %d stages", tc.src, e.Ops(), len(stages))
		}
		for _, c := range tc.code {
			if !strings.Contains(src, c) {
				t.Errorf("%s: the source lacks %q:\n%s", tc.src, c, src)
			}
		}
	}
	// Fused, the same expression moves each input once: half the bytes.
	e, _ := Parse("sigmoid(a + b*c)")
	if _, stages := e.Unfused("u"); e.BytesPerElement() != 16 || len(stages) != 3 {
		t.Errorf("fused %d bytes an element, %d stages", e.BytesPerElement(), len(stages))
	}
}
