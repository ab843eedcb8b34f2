//go:build gpu

package blas

import (
	"math"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/internal/gputest"
)

// These tests need an NVIDIA GPU and cuBLAS. Build them with -tags gpu
// (make gpu-test); where no GPU is found they skip and say why.

// openGPU opens a worker on the GPU, or skips the test where there is
// none, or no cuBLAS.
func openGPU(t testing.TB) gpu.Device {
	t.Helper()
	w := gputest.Open(t)
	if _, err := Version(); err != nil {
		t.Skipf("no cuBLAS here: %v", err)
	}
	return w
}

// poison is a NaN bit pattern no product computes by accident.
const poison = 0x7fc0dead

// gemmRef computes row-major C = op(A)·op(B) in float64.
func gemmRef(g GEMM, a, b []float64) []float64 {
	c := make([]float64, g.M*g.N)
	for i := 0; i < g.M; i++ {
		for k := 0; k < g.K; k++ {
			av := a[i*g.K+k]
			if g.TransA {
				av = a[k*g.M+i]
			}
			for j := 0; j < g.N; j++ {
				bv := b[k*g.N+j]
				if g.TransB {
					bv = b[j*g.K+k]
				}
				c[i*g.N+j] += av * bv
			}
		}
	}
	return c
}

// relErr is ‖got − want‖ / ‖want‖.
func relErr(got, want []float64) float64 {
	var num, den float64
	for i := range want {
		num += (got[i] - want[i]) * (got[i] - want[i])
		den += want[i] * want[i]
	}
	return math.Sqrt(num / den)
}

// encode rounds v to dtype t and returns the device bytes and the rounded values.
func encode(t gpu.DType, v []float32) ([]byte, []float64) {
	vals := make([]float64, len(v))
	switch t {
	case gpu.FP16, gpu.BF16:
		bits := make([]uint16, len(v))
		for i, x := range v {
			if t == gpu.FP16 {
				bits[i] = gpu.Float16Bits(x)
				vals[i] = float64(gpu.Float16From(bits[i]))
			} else {
				bits[i] = gpu.BFloat16Bits(x)
				vals[i] = float64(gpu.BFloat16From(bits[i]))
			}
		}
		return gputest.Bytes(bits), vals
	case gpu.FP8E4M3:
		bits := make([]uint8, len(v))
		for i, x := range v {
			bits[i] = gpu.Float8E4M3Bits(x)
			vals[i] = float64(gpu.Float8E4M3From(bits[i]))
		}
		return bits, vals
	}
	for i, x := range v {
		vals[i] = float64(x)
	}
	return gputest.Bytes(v), vals
}

func decode(t gpu.DType, b []byte) []float64 {
	switch t {
	case gpu.FP16, gpu.BF16:
		out := make([]float64, len(b)/2)
		for i := range out {
			h := uint16(b[2*i]) | uint16(b[2*i+1])<<8
			if t == gpu.FP16 {
				out[i] = float64(gpu.Float16From(h))
			} else {
				out[i] = float64(gpu.BFloat16From(h))
			}
		}
		return out
	}
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24))
	}
	return out
}

func TestGPUGEMM(t *testing.T) {
	w := openGPU(t)
	r := gputest.Rand(t)
	tests := []struct {
		desc string
		g    GEMM
		tol  float64
	}{
		{"sgemm 256³", GEMM{M: 256, N: 256, K: 256, Type: gpu.FP32}, 1e-5},
		{"sgemm 1000×1003×517", GEMM{M: 1000, N: 1003, K: 517, Type: gpu.FP32}, 1e-5},
		{"sgemm Aᵀ 1000×1003×517", GEMM{M: 1000, N: 1003, K: 517, Type: gpu.FP32, TransA: true}, 1e-5},
		{"sgemm Bᵀ 17×33×65", GEMM{M: 17, N: 33, K: 65, Type: gpu.FP32, TransB: true}, 1e-5},
		{"sgemm 1×1×1", GEMM{M: 1, N: 1, K: 1, Type: gpu.FP32}, 1e-6},
		{"tf32 1000×1003×517", GEMM{M: 1000, N: 1003, K: 517, Type: gpu.FP32, Compute: Compute32FFastTF32}, 3e-3},
		{"hgemm 1000×1003×517", GEMM{M: 1000, N: 1003, K: 517, Type: gpu.FP16}, 2e-3},
		{"hgemm 256³ fp16 accumulate", GEMM{M: 256, N: 256, K: 256, Type: gpu.FP16, Compute: Compute16F}, 5e-3},
		{"bf16 in, fp32 out 1000×1003×517", GEMM{M: 1000, N: 1003, K: 517, Type: gpu.BF16, OutType: gpu.FP32}, 1e-5},
	}
	for _, tt := range tests {
		g := tt.g
		g.Alpha = 1
		out := g.OutType
		if out == 0 {
			out = g.Type
		}
		ab, a := encode(g.Type, gputest.Floats(r, g.M*g.K))
		bb, b := encode(g.Type, gputest.Floats(r, g.K*g.N))
		g.A, g.B = gputest.Upload(t, w, ab), gputest.Upload(t, w, bb)
		g.C = gputest.Alloc(t, w, int64(g.M*g.N*out.Size()))
		if err := w.Run(gpu.Memset{Dst: g.C, Value: poison, Count: int64(g.M * g.N * out.Size() / 4)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Run(g); err != nil {
			t.Errorf("%s: %v", tt.desc, err)
			continue
		}
		cb := make([]byte, g.M*g.N*out.Size())
		if err := w.Read(cb, g.C); err != nil {
			t.Fatal(err)
		}
		if e := relErr(decode(out, cb), gemmRef(g, a, b)); !(e <= tt.tol) {
			t.Errorf("%s: relative error %.3g > tol %.1g", tt.desc, e, tt.tol)
		} else {
			t.Logf("%s: relative error %.3g (tol %.1g)", tt.desc, e, tt.tol)
		}
	}
}

// TestGPUFP8: the FP8 product through cuBLASLt, with fast accumulation
// and without, against the float64 product of its rounded inputs: what is
// left is the accumulation and the bf16 output's rounding. K is long, so
// that an accumulator kept at low precision would show.
func TestGPUFP8(t *testing.T) {
	w := openGPU(t)
	if info := w.Info(); info.Major*10+info.Minor < 89 {
		t.Skipf("FP8 needs compute capability 8.9; this GPU has %d.%d", info.Major, info.Minor)
	}
	r := gputest.Rand(t)
	const m, n, k = 256, 128, 8192
	ab, a := encode(gpu.FP8E4M3, gputest.Floats(r, m*k))
	bb, b := encode(gpu.FP8E4M3, gputest.Floats(r, n*k)) // N×K: B transposed, as cuBLASLt takes FP8
	g := GEMM{M: m, N: n, K: k, Type: gpu.FP8E4M3, OutType: gpu.BF16, TransB: true, Alpha: 1,
		A: gputest.Upload(t, w, ab), B: gputest.Upload(t, w, bb), C: gputest.Alloc(t, w, 2*m*n)}
	want := gemmRef(g, a, b)
	for _, fast := range []bool{false, true} {
		g.FastAccum = fast
		if err := w.Run(gpu.Memset{Dst: g.C, Value: poison, Count: m * n / 2}); err != nil {
			t.Fatal(err)
		}
		if err := w.Run(g); err != nil {
			t.Errorf("%s: %v", g.Name(), err)
			continue
		}
		cb := make([]byte, 2*m*n)
		if err := w.Read(cb, g.C); err != nil {
			t.Fatal(err)
		}
		const tol = 2e-2
		if e := relErr(decode(gpu.BF16, cb), want); !(e <= tol) {
			t.Errorf("%s: relative error %.3g > tol %.1g", g.Name(), e, tol)
		} else {
			t.Logf("%s: relative error %.3g against the rounded inputs (tol %.1g)", g.Name(), e, tol)
		}
	}
}

func TestGPUStridedBatchedGEMM(t *testing.T) {
	w := openGPU(t)
	r := gputest.Rand(t)
	const batch, m, n, k = 3, 64, 48, 40
	g := GEMM{M: m, N: n, K: k, Type: gpu.FP32, Alpha: 1, Batch: batch, StrideA: m * k, StrideB: k * n, StrideC: m * n}
	av, bv := gputest.Floats(r, batch*m*k), gputest.Floats(r, batch*k*n)
	g.A, g.B, g.C = gputest.Upload(t, w, av), gputest.Upload(t, w, bv), gputest.Alloc(t, w, 4*batch*m*n)
	if err := w.Run(g); err != nil {
		t.Fatal(err)
	}
	c, _ := gpu.Download[float32](w, g.C, batch*m*n)
	for i := 0; i < batch; i++ {
		_, a := encode(gpu.FP32, av[i*m*k:(i+1)*m*k])
		_, b := encode(gpu.FP32, bv[i*k*n:(i+1)*k*n])
		_, got := encode(gpu.FP32, c[i*m*n:(i+1)*m*n])
		if e := relErr(got, gemmRef(GEMM{M: m, N: n, K: k}, a, b)); e > 1e-5 {
			t.Errorf("batch %d: relative error %.3g", i, e)
		}
	}
}

// TestGPUThroughput measures cuBLAS at 4096³ in each precision: the
// ceilings lesson 1 measures too, here as a check that the products run
// at a plausible rate (above a tenth of the GPU's peak).
func TestGPUThroughput(t *testing.T) {
	w := openGPU(t)
	const m = 4096
	r := gputest.Rand(t)
	info := w.Info()
	for _, cfg := range []struct {
		name    string
		typ     gpu.DType
		compute Compute
		peak    string
	}{{"sgemm fp32", gpu.FP32, Compute32F, gpu.PeakFP32}, {"tf32", gpu.FP32, Compute32FFastTF32, gpu.PeakTF32},
		{"hgemm fp16", gpu.FP16, Compute32F, gpu.PeakFP16}, {"bf16", gpu.BF16, Compute32F, gpu.PeakBF16}} {
		// Random inputs: constant or zero data draws less power and runs faster.
		ab, _ := encode(cfg.typ, gputest.Floats(r, m*m))
		bb, _ := encode(cfg.typ, gputest.Floats(r, m*m))
		g := GEMM{M: m, N: m, K: m, Type: cfg.typ, Compute: cfg.compute, Alpha: 1,
			A: gputest.Upload(t, w, ab), B: gputest.Upload(t, w, bb), C: gputest.Alloc(t, w, int64(m*m*cfg.typ.Size()))}
		tm, err := w.Bench(gpu.Bench{Name: cfg.name, Ops: [][]gpu.Op{{g}}})
		if err != nil {
			t.Fatalf("bench %s: %v", cfg.name, err)
		}
		rate := tm.Stats().Rate(2 * m * m * m)
		peak, how, ok := info.Peak(cfg.peak)
		t.Logf("cuBLAS %s 4096³: %.1f TFLOP/s (peak %.1f, %s)", cfg.name, rate/1e12, peak/1e12, how)
		if ok && rate < peak/10 {
			t.Errorf("cuBLAS %s 4096³ at %.1f TFLOP/s, under a tenth of the %.1f TFLOP/s peak", cfg.name, rate/1e12, peak/1e12)
		}
	}
}

// TestGPUGraphOfGEMMWatchesItsBuffers: a graph that captured a product is
// refused once a matrix it reads is freed, as a graph of kernels is.
func TestGPUGraphOfGEMMWatchesItsBuffers(t *testing.T) {
	w := openGPU(t)
	const n = 64
	a, err := w.Alloc(4 * n * n)
	if err != nil {
		t.Fatal(err)
	}
	g := GEMM{M: n, N: n, K: n, Type: gpu.FP32, Alpha: 1, A: a, B: gputest.Alloc(t, w, 4*n*n), C: gputest.Alloc(t, w, 4*n*n)}
	graph, err := w.Capture(g)
	if err != nil {
		t.Fatalf("Capture(%s) = %v", g.Name(), err)
	}
	defer w.FreeGraph(graph)
	if err := w.Run(gpu.GraphOp{Graph: graph}); err != nil {
		t.Fatalf("replay = %v", err)
	}
	if err := w.Free(a); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(gpu.GraphOp{Graph: graph}); err == nil || !strings.Contains(err.Error(), "freed after it was captured") {
		t.Errorf("replay after A was freed = %v, want it refused", err)
	}
}
