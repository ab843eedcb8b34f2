package hellogpu

import (
	"math/rand/v2"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
)

// The GEMM ceilings, which the framework does not know: they need cuBLAS.
const (
	ceilingSGEMM = "sgemm" // cuBLAS SGEMM 4096³ fp32, TFLOP/s
	ceilingHGEMM = "hgemm" // cuBLAS GEMM 4096³ fp16 in and out, fp32 accumulation, TFLOP/s
)

func init() {
	lessons.RegisterCeiling(ceilingSGEMM, "cuBLAS SGEMM fp32 4096³", func(env *lessons.Env) (lessons.Result, error) {
		return measureGEMM(env, gpu.FP32, 4096)
	})
	lessons.RegisterCeiling(ceilingHGEMM, "cuBLAS HGEMM fp16 4096³", func(env *lessons.Env) (lessons.Result, error) {
		return measureGEMM(env, gpu.FP16, 4096)
	})
}

// measureGEMM times cuBLAS on random n×n×n inputs of type t (random data:
// zeros draw less power and run faster than real inputs).
func measureGEMM(env *lessons.Env, t gpu.DType, n int) (lessons.Result, error) {
	d := env.Dev
	r := rand.New(rand.NewPCG(rand.Uint64(), 1))
	upload := func() (gpu.DevicePtr, error) {
		if t == gpu.FP32 {
			v := make([]float32, n*n)
			for i := range v {
				v[i] = r.Float32()*2 - 1
			}
			return gpu.Upload(d, v)
		}
		v := make([]uint16, n*n)
		for i := range v {
			v[i] = gpu.Float16Bits(r.Float32()*2 - 1)
		}
		return gpu.Upload(d, v)
	}
	a, err := upload()
	if err != nil {
		return lessons.Result{}, err
	}
	defer d.Free(a)
	b, err := upload()
	if err != nil {
		return lessons.Result{}, err
	}
	defer d.Free(b)
	c, err := d.Alloc(int64(n * n * t.Size()))
	if err != nil {
		return lessons.Result{}, err
	}
	defer d.Free(c)
	g := blas.GEMM{M: n, N: n, K: n, A: a, B: b, C: c, Alpha: 1, Type: t, Compute: blas.Compute32F}
	// A longer warm-up than usual: the GPU raises its clocks under load.
	tm, err := d.Bench(gpu.Bench{Name: "cuBLAS " + t.String(), Ops: [][]gpu.Op{{g}}, Warmup: 10, Reps: 20})
	if err != nil {
		return lessons.Result{}, err
	}
	st := tm.Stats()
	return lessons.Result{Size: lessons.Size{n, n, n}.String(), Dims: []int{n, n, n}, DType: t.String(), Unit: "TFLOP/s",
		Throughput: st.Rate(2*float64(n)*float64(n)*float64(n)) / 1e12}.WithTimes(st), nil
}
