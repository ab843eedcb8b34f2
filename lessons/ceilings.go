package lessons

import (
	"fmt"
	"math/rand/v2"

	"cudarepl/gpu"
)

// Ceilings measured on the GPU the lessons run on, which results are
// compared with. Each is measured once per session.
const (
	CeilingCopy  = "copy"  // device-to-device copy, GB/s counting bytes read and written
	CeilingSGEMM = "sgemm" // cuBLAS SGEMM 4096³ fp32, TFLOP/s
	CeilingHGEMM = "hgemm" // cuBLAS GEMM 4096³ fp16 in and out, fp32 accumulation, TFLOP/s
)

var ceilingNames = map[string]string{
	CeilingCopy:  "device-to-device copy",
	CeilingSGEMM: "cuBLAS SGEMM fp32 4096³",
	CeilingHGEMM: "cuBLAS HGEMM fp16 4096³",
}

// Ceiling returns the named ceiling, measuring it on first use. The
// result's Variant is its display name and Throughput its value.
func (e *Env) Ceiling(name string) (Result, error) {
	if r, ok := e.ceilings[name]; ok {
		return r, nil
	}
	if !e.Live() {
		return Result{}, fmt.Errorf("lessons: ceiling %s: no GPU", name)
	}
	var r Result
	var err error
	switch name {
	case CeilingCopy:
		r, err = e.measureCopy(256 << 20)
	case CeilingSGEMM:
		r, err = e.measureGEMM(gpu.FP32, 4096)
	case CeilingHGEMM:
		r, err = e.measureGEMM(gpu.FP16, 4096)
	default:
		return r, fmt.Errorf("lessons: no ceiling %q", name)
	}
	if err != nil {
		return r, fmt.Errorf("measure %s: %w", ceilingNames[name], err)
	}
	r.Kind, r.Variant = "ceiling", ceilingNames[name]
	e.stamp(&r)
	if e.ceilings == nil {
		e.ceilings = map[string]Result{}
	}
	e.ceilings[name] = r
	return r, nil
}

// measureCopy times a device-to-device copy of bytes, which reads and
// writes each byte once: no kernel that must do both can beat it by much.
func (e *Env) measureCopy(bytes int64) (Result, error) {
	d := e.Dev
	src, err := d.Alloc(bytes)
	if err != nil {
		return Result{}, err
	}
	defer d.Free(src)
	dst, err := d.Alloc(bytes)
	if err != nil {
		return Result{}, err
	}
	defer d.Free(dst)
	if err := d.Run(gpu.Memset{Dst: src, Value: 0x3f800000, Count: bytes / 4}); err != nil {
		return Result{}, err
	}
	t, err := d.Bench(gpu.Bench{Name: "device-to-device copy", Ops: [][]gpu.Op{{gpu.Copy{Kind: gpu.DeviceToDevice, Dst: uint64(dst), Src: uint64(src), Bytes: bytes}}}})
	if err != nil {
		return Result{}, err
	}
	st := t.Stats()
	return Result{Size: fmt.Sprintf("%d MiB", bytes>>20), Dims: []int{int(bytes)}, DType: "bytes", Unit: "GB/s",
		Throughput: st.Rate(float64(2*bytes)) / 1e9}.WithTimes(st), nil
}

// measureGEMM times cuBLAS on random n×n×n inputs of type t (random data:
// zeros draw less power and run faster than real inputs).
func (e *Env) measureGEMM(t gpu.DType, n int) (Result, error) {
	d := e.Dev
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
		return Result{}, err
	}
	defer d.Free(a)
	b, err := upload()
	if err != nil {
		return Result{}, err
	}
	defer d.Free(b)
	c, err := d.Alloc(int64(n * n * t.Size()))
	if err != nil {
		return Result{}, err
	}
	defer d.Free(c)
	g := gpu.GEMM{M: n, N: n, K: n, A: a, B: b, C: c, Alpha: 1, Type: t, Compute: gpu.Compute32F}
	// A longer warm-up than usual: the GPU raises its clocks under load.
	tm, err := d.Bench(gpu.Bench{Name: "cuBLAS " + t.String(), Ops: [][]gpu.Op{{g}}, Warmup: 10, Reps: 20})
	if err != nil {
		return Result{}, err
	}
	st := tm.Stats()
	return Result{Size: Size{n, n, n}.String(), Dims: []int{n, n, n}, DType: t.String(), Unit: "TFLOP/s",
		Throughput: st.Rate(2*float64(n)*float64(n)*float64(n)) / 1e12}.WithTimes(st), nil
}
