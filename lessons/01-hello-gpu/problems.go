package hellogpu

import (
	"fmt"
	"math/rand/v2"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// copyProblem is a device-to-device copy of n bytes (n a multiple of 4).
func copyProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "device-to-device copy", DType: "bytes", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy,
		CheckSizes: []lessons.Size{{4}, {4000}, {1<<20 + 12}},
		Impls:      []lessons.Impl{{Name: "cuMemcpyDtoD", Summary: "the driver's copy engine path", Library: true}},
		Setup:      setupCopy,
		Memory: func(s lessons.Size) lessons.Memory {
			return lessons.Memory{Device: 2 * int64(s[0]), Host: 3 * int64(s[0])} // source and copy; the words, uploaded and read back
		},
		Work:      func(s lessons.Size) float64 { return 2 * float64(s[0]) }, // read once, written once
		SizeLabel: bytesLabel,
	}
}

func bytesLabel(s lessons.Size) string {
	switch b := s[0]; {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	default:
		return fmt.Sprintf("%d B", b)
	}
}

type copyCase struct {
	env      *lessons.Env
	words    int
	src, dst gpu.DevicePtr
	want     []uint32
}

func setupCopy(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	if s[0]%4 != 0 || s[0] <= 0 {
		return nil, fmt.Errorf("copy of %d bytes: a positive multiple of 4 is needed", s[0])
	}
	c := &copyCase{env: env, words: s[0] / 4, want: make([]uint32, s[0]/4)}
	for i := range c.want {
		c.want[i] = rand.Uint32()
	}
	var err error
	if c.src, err = gpu.Upload(env.Dev, c.want); err != nil {
		return nil, err
	}
	if c.dst, err = env.Dev.Alloc(int64(s[0])); err != nil {
		env.Dev.Free(c.src)
		return nil, err
	}
	return c, nil
}

func (c *copyCase) Ops(lessons.Impl, gpu.Kernel, int) ([]gpu.Op, error) {
	return []gpu.Op{gpu.Copy{Kind: gpu.DeviceToDevice, Dst: uint64(c.dst), Src: uint64(c.src), Bytes: int64(4 * c.words)}}, nil
}

func (c *copyCase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dst, Value: lessons.PoisonWord(gpu.FP32), Count: int64(c.words)})
}

// Check compares every word of the copy with the source.
func (c *copyCase) Check() (numeric.CheckStats, error) {
	got, err := gpu.Download[uint32](c.env.Dev, c.dst, c.words)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	st := numeric.CheckStats{N: c.words}
	bad, first := 0, -1
	for i := range got {
		if got[i] != c.want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return st, fmt.Errorf("check: word %d = %#08x, want %#08x; %d of %d words differ", first, got[first], c.want[first], bad, c.words)
	}
	return st, nil
}

func (c *copyCase) Free() {
	c.env.Dev.Free(c.src)
	c.env.Dev.Free(c.dst)
}

// gemmProblem is C = A·B through cuBLAS in three precisions.
func gemmProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "cuBLAS GEMM", DType: "fp32/tf32/fp16", Unit: "TFLOP/s",
		CheckSizes: []lessons.Size{{1000, 1003, 517}, {17, 33, 65}},
		Impls: []lessons.Impl{
			{Name: "cuBLAS fp32", Summary: "fp32 on the CUDA cores", Library: true, Peak: gpu.PeakFP32},
			{Name: "cuBLAS tf32", Summary: "fp32 data, tensor cores with inputs rounded to TF32", Library: true, Peak: gpu.PeakTF32},
			{Name: "cuBLAS fp16", Summary: "fp16 data on tensor cores, fp32 accumulation", Library: true, Peak: gpu.PeakFP16},
		},
		Setup:  setupGEMM,
		Memory: gemmMemory,
		Work:   lessons.MatmulFLOPs,
	}
}

// gemmCase holds A and B in fp32 and in fp16, and C big enough for fp32.
type gemmCase struct {
	env                *lessons.Env
	m, n, k            int
	a32, b32, a16, b16 gpu.DevicePtr
	c                  gpu.DevicePtr
	a, b               []float64 // the fp32 inputs
	ah, bh             []float64 // the same rounded to fp16
	last               string    // the impl whose output C holds
	sample             []int     // the elements of C checked
}

func setupGEMM(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	m, n, k := s[0], s[1], s[2]
	c := &gemmCase{env: env, m: m, n: n, k: k}
	a32, b32 := make([]float32, m*k), make([]float32, k*n)
	a16, b16 := make([]uint16, m*k), make([]uint16, k*n)
	c.a, c.b, c.ah, c.bh = make([]float64, m*k), make([]float64, k*n), make([]float64, m*k), make([]float64, k*n)
	fill := func(f32 []float32, f16 []uint16, f, h []float64) {
		for i := range f32 {
			f32[i] = rand.Float32()*2 - 1
			f16[i] = gpu.Float16Bits(f32[i])
			f[i], h[i] = float64(f32[i]), float64(gpu.Float16From(f16[i]))
		}
	}
	fill(a32, a16, c.a, c.ah)
	fill(b32, b16, c.b, c.bh)
	var err error
	for _, up := range []struct {
		dst *gpu.DevicePtr
		f   func() (gpu.DevicePtr, error)
	}{
		{&c.a32, func() (gpu.DevicePtr, error) { return gpu.Upload(env.Dev, a32) }},
		{&c.b32, func() (gpu.DevicePtr, error) { return gpu.Upload(env.Dev, b32) }},
		{&c.a16, func() (gpu.DevicePtr, error) { return gpu.Upload(env.Dev, a16) }},
		{&c.b16, func() (gpu.DevicePtr, error) { return gpu.Upload(env.Dev, b16) }},
		{&c.c, func() (gpu.DevicePtr, error) { return env.Dev.Alloc(int64(4 * m * n)) }},
	} {
		if *up.dst, err = up.f(); err != nil {
			c.Free()
			return nil, err
		}
	}
	c.sample = numeric.MatmulSample(m, n, k)
	return c, nil
}

func (c *gemmCase) Ops(impl lessons.Impl, _ gpu.Kernel, _ int) ([]gpu.Op, error) {
	g := blas.GEMM{M: c.m, N: c.n, K: c.k, A: c.a32, B: c.b32, C: c.c, Alpha: 1, Type: gpu.FP32, Compute: blas.Compute32F}
	switch impl.Name {
	case "cuBLAS fp32":
	case "cuBLAS tf32":
		g.Compute = blas.Compute32FFastTF32
	case "cuBLAS fp16":
		g.A, g.B, g.Type, g.OutType = c.a16, c.b16, gpu.FP16, gpu.FP16
	default:
		return nil, fmt.Errorf("cuBLAS GEMM has no variant %q", impl.Name)
	}
	c.last = impl.Name
	return []gpu.Op{g}, nil
}

func (c *gemmCase) Poison() error {
	t := gpu.FP32
	if c.last == "cuBLAS fp16" {
		t = gpu.FP16
	}
	return c.env.Dev.Run(gpu.Memset{Dst: c.c, Value: lessons.PoisonWord(t), Count: int64(c.m * c.n)})
}

// Check compares C (every element, or the sample for big products) with a
// float64 product of the very inputs the impl read.
func (c *gemmCase) Check() (numeric.CheckStats, error) {
	var got []float32
	if c.last == "cuBLAS fp16" {
		h, err := gpu.Download[uint16](c.env.Dev, c.c, c.m*c.n)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		got = make([]float32, len(h))
		for i, v := range h {
			got[i] = gpu.Float16From(v)
		}
	} else {
		var err error
		if got, err = gpu.Download[float32](c.env.Dev, c.c, c.m*c.n); err != nil {
			return numeric.CheckStats{}, err
		}
	}
	a, b := c.a, c.b
	if c.last == "cuBLAS fp16" {
		a, b = c.ah, c.bh
	}
	switch c.last {
	case "cuBLAS fp32":
		return numeric.MatmulCheck(got, a, b, c.m, c.n, c.k, c.sample, numeric.TolFP32Sum(c.k), false)
	case "cuBLAS tf32":
		return numeric.MatmulCheck(got, a, b, c.m, c.n, c.k, c.sample, numeric.TolTF32, true)
	}
	return numeric.MatmulCheck(got, a, b, c.m, c.n, c.k, c.sample, numeric.TolHalf, true)
}

// gemmMemory is A and B in fp32 and fp16 and an fp32 C on the device; on
// the host the same inputs, four float64 copies of them for the
// references, and C read back.
func gemmMemory(s lessons.Size) lessons.Memory {
	ab, c := int64(s[0]*s[2]+s[2]*s[1]), int64(s[0]*s[1])
	return lessons.Memory{Device: 4*(ab+c) + 2*ab, Host: 6*ab + 32*ab + 8*c}
}

func (c *gemmCase) Free() {
	c.env.FreeAll(c.a32, c.b32, c.a16, c.b16, c.c)
}
