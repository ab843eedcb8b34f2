package precision

import (
	"fmt"
	"math"
	"math/rand/v2"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// The dot problem: out[r] = Σ_j x[r,j]·y[r,j] over rows of fp16, out in
// fp16, at sizes {rows, n}. Row r holds values of kind r mod dotKinds.
const (
	dotSigned   = iota // x, y in [−1, 1): the sum wanders about 0, its terms cancel
	dotPositive        // x in [0, 1), y in [0, 1/8): the sum grows as n/32, within fp16's range up to n = 2²⁰
	dotTiny            // x, y in [2⁻¹⁴, 2⁻¹³): normal fp16 values whose products lie below fp16's smallest subnormal
	dotKinds
)

// dotKindNames name the kinds of row in tables.
var dotKindNames = [dotKinds]string{"signed", "positive", "tiny"}

// dotBlock is the threads per block dot_h_v1 is launched with, a block a
// row: the starter's and the kernels' reductions assume it.
const dotBlock = 256

// dotBench is the size a passing exercise is timed at: 2048 rows of 16384,
// 128 MiB of fp16 read.
var dotBench = lessons.Size{2048, 16384}

// dotLambda scales the √n·u of fp32 accumulation in the tolerance (see
// dotTol).
const dotLambda = 8

// dotTol is the tolerance of a dot product of n fp16 terms accumulated in
// fp32 and rounded to fp16 once, relative to Σ|x·y| (dotScale): the fp16
// rounding of the output, 2⁻¹¹ of it, plus the fp32 rounding of n
// additions, each at most u = 2⁻²⁴ of the running sum. In the worst case
// those add up to n·u; for errors independent with mean zero, Higham and
// Mary bound them by λ·√n·u with a probability that nears 1 as λ grows
// ("A New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci.
// Comput. 41(5), 2019). The check allows dotLambda·√n·u: how much of it
// fp32 sums use, and how far fp16 sums (2⁻¹¹ an addition) pass it, is
// what TestDotCheckSizes measures on the model.
func dotTol(n int) float64 {
	return math.Ldexp(1, -11) + dotLambda*math.Sqrt(float64(n))*math.Ldexp(1, -24)
}

// dotScale is what a row's error is measured against: Σ|x·y|, or fp16's
// smallest normal value 2⁻¹⁴ where the sum is smaller, below which the
// output's rounding is a fixed 2⁻²⁵ rather than a share of the sum.
func dotScale(abs float64) float64 { return math.Max(abs, math.Ldexp(1, -14)) }

// dotShape reads a size {rows, n}.
func dotShape(s lessons.Size) (rows, n int) { return s[0], s[1] }

func dotProblem() *lessons.Problem {
	p := &lessons.Problem{
		Name: "dot products, fp16", DType: "float16", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy, Kernels: "precision.cu",
		// Every kind of row at every size from 1 term to 2²⁰, n not a
		// multiple of the block among them.
		CheckSizes: []lessons.Size{{3, 1}, {3, 3}, {6, 1000}, {3, 4099}, {3, 1 << 16}, {3, 1 << 20}},
		Reference:  "the exact sum of each row's fp16 products, in float64",
		Setup:      setupDot,
		Memory:     dotMemory,
		Work:       dotBytes,
		SizeLabel:  dotLabel,
	}
	p.Impls = append(lessons.LadderImpls("precision.cu"), lessons.Impl{Name: "dot_h_acc16",
		Summary: "dot_h_v1 with each thread's running sum kept in fp16: every addition rounded to 11 significant bits"})
	return p
}

// dotLabel writes a size as "3 rows of 4099".
func dotLabel(s lessons.Size) string {
	rows, n := dotShape(s)
	if rows == 1 {
		return fmt.Sprintf("1 row of %d", n)
	}
	return fmt.Sprintf("%d rows of %d", rows, n)
}

// dotBytes is what a dot product must move: x and y read, out written.
func dotBytes(s lessons.Size) float64 {
	rows, n := dotShape(s)
	return 4*float64(rows)*float64(n) + 2*float64(rows)
}

// dotMemory is x, y and out on the device; on the host, x and y, the
// reference and its scale, and out read back.
func dotMemory(s lessons.Size) lessons.Memory {
	rows, n := dotShape(s)
	elems := int64(rows) * int64(n)
	return lessons.Memory{Device: 4*elems + 4*outWords(rows), Host: 4*elems + 16*int64(rows) + 4*outWords(rows)}
}

// outWords is how many 32-bit words hold rows fp16 outputs: what Poison
// fills.
func outWords(rows int) int64 { return int64(rows+1) / 2 }

// halfValue is every fp16 value by its bits, as float32: decoding by
// table keeps the references of long rows quick.
var halfValue = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for b := range t {
		t[b] = gpu.Float16From(uint16(b))
	}
	return &t
}()

// dotInput fills rows×n fp16 values of x and y from seed, row r of kind r
// mod dotKinds: the same for the same seed however many goroutines fill
// them.
func dotInput(rows, n int, seed uint64) (x, y []uint16) {
	x, y = make([]uint16, rows*n), make([]uint16, rows*n)
	numeric.Parallel(rows, 1, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			lo, hi, ylo, yhi := -1.0, 1.0, -1.0, 1.0
			switch r % dotKinds {
			case dotPositive:
				lo, hi, ylo, yhi = 0, 1, 0, 0.125
			case dotTiny:
				lo, hi = math.Ldexp(1, -14), math.Ldexp(1, -13)
				ylo, yhi = lo, hi
			}
			for j := r * n; j < (r+1)*n; j++ {
				x[j] = gpu.Float16Bits(float32(lo + (hi-lo)*rng.Float64()))
				y[j] = gpu.Float16Bits(float32(ylo + (yhi-ylo)*rng.Float64()))
			}
		}
	})
	return x, y
}

// dotReference returns each row's exact sum of products and Σ|x·y|: the
// products of fp16 values are exact in float64, and float64's rounding of
// the sum, 2²⁹ times finer than fp32's, is none that matters here.
func dotReference(x, y []uint16, rows, n int) (want, abs []float64) {
	want, abs = make([]float64, rows), make([]float64, rows)
	numeric.Parallel(rows, 1, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			var s, a float64
			for j := r * n; j < (r+1)*n; j++ {
				p := float64(halfValue[x[j]]) * float64(halfValue[y[j]])
				s += p
				a += math.Abs(p)
			}
			want[r], abs[r] = s, a
		}
	})
	return want, abs
}

// dotCompare checks each row's output got against want within
// dotTol(n)·dotScale(abs): the error reported is each row's
// |got − want| / dotScale, the tolerance dotTol(n). A NaN (a row never
// written) or an Inf (a sum past fp16's range) fails.
func dotCompare(got, want, abs []float64, n int) (numeric.CheckStats, error) {
	tol := dotTol(n)
	st := numeric.CheckStats{Tol: tol, N: len(want)}
	var first *numeric.CheckError
	bad := 0
	for r, w := range want {
		scale := dotScale(abs[r])
		e := math.Abs(got[r]-w) / scale
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		st.MaxRelErr = math.Max(st.MaxRelErr, e)
		if e <= tol {
			continue
		}
		bad++
		if first == nil {
			first = &numeric.CheckError{Name: "out", Index: []int{r}, Got: got[r], Want: w, Tol: tol * scale}
		}
	}
	if first != nil {
		first.Bad, first.Total = bad, len(want)
		return st, first
	}
	return st, nil
}

// dcase is one dot problem on the GPU.
type dcase struct {
	env       *lessons.Env
	rows, n   int
	x, y      []uint16
	want, abs []float64 // computed at the first check
	dx, dy    gpu.DevicePtr
	dout      gpu.DevicePtr
}

func setupDot(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	rows, n := dotShape(s)
	c := &dcase{env: env, rows: rows, n: n}
	c.x, c.y = dotInput(rows, n, dotSeed(rows, n))
	var err error
	if c.dx, err = gpu.Upload(env.Dev, c.x); err != nil {
		return nil, err
	}
	if c.dy, err = gpu.Upload(env.Dev, c.y); err != nil {
		c.Free()
		return nil, err
	}
	if c.dout, err = env.Dev.Alloc(4 * outWords(rows)); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// dotSeed is the seed of the inputs of size {rows, n}: the same inputs
// for the same size, on the GPU and in the models of the CPU.
func dotSeed(rows, n int) uint64 { return uint64(rows)<<32 | uint64(n) }

// Ops launches the kernel as dot_h_v1 is launched: a block per row.
func (c *dcase) Ops(_ lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(c.rows), Block: gpu.Dim(block),
		Args: []gpu.Arg{gpu.Ptr(c.dx), gpu.Ptr(c.dy), gpu.Ptr(c.dout), gpu.Int32(int32(c.rows)), gpu.Int32(int32(c.n))}}}, nil
}

// Poison fills out with fp16 NaNs.
func (c *dcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dout, Value: numeric.Poison16, Count: outWords(c.rows)})
}

// outputs reads out back, as values.
func (c *dcase) outputs() ([]float64, error) {
	h, err := gpu.Download[uint16](c.env.Dev, c.dout, c.rows)
	if err != nil {
		return nil, err
	}
	got := make([]float64, c.rows)
	for i, b := range h {
		got[i] = float64(halfValue[b])
	}
	return got, nil
}

// Check compares each row's output with the exact sum.
func (c *dcase) Check() (numeric.CheckStats, error) {
	got, err := c.outputs()
	if err != nil {
		return numeric.CheckStats{}, err
	}
	if c.want == nil {
		c.want, c.abs = dotReference(c.x, c.y, c.rows, c.n)
	}
	return dotCompare(got, c.want, c.abs, c.n)
}

func (c *dcase) Free() { c.env.FreeAll(c.dx, c.dy, c.dout) }

// A partialSum is the arithmetic of one thread's share of a row, as a
// kernel launched like dot_h_v1 does it: the running sum, and the next x
// and y as fp16 bits, give the next running sum, a float32 as the kernel
// holds it.
type partialSum func(acc float32, x, y uint16) float32

// The partial sums of the course's kernels and of the mistakes the
// exercise's checks must reject, each rounding as the GPU rounds.
var (
	// sumFP32 adds the exact product in fp32 (dot_h_v1).
	sumFP32 partialSum = func(acc float32, x, y uint16) float32 { return acc + halfValue[x]*halfValue[y] }
	// sumFP16 keeps the running sum in fp16: the fp32 sum rounded to fp16
	// (dot_h_acc16, and the planted half_accumulator.cu).
	sumFP16 partialSum = func(acc float32, x, y uint16) float32 { return round16(acc + halfValue[x]*halfValue[y]) }
	// sumProduct16 rounds each product to fp16 before adding it in fp32
	// (half_product.cu).
	sumProduct16 partialSum = func(acc float32, x, y uint16) float32 { return acc + round16(halfValue[x]*halfValue[y]) }
	// sumBits multiplies the bits as integers (bits_as_numbers.cu).
	sumBits partialSum = func(acc float32, x, y uint16) float32 { return acc + float32(x)*float32(y) }
)

// dotModel is what a kernel launched like dot_h_v1, thread t adding the
// columns t, t + 256, … by sum, writes for each row: the 256 partial sums
// added in fp32 as sum256's tree adds them, and the total rounded to fp16.
func dotModel(x, y []uint16, rows, n int, sum partialSum) []float64 {
	out := make([]float64, rows)
	numeric.Parallel(rows, 1, func(r0, r1 int) {
		var s [dotBlock]float32
		for r := r0; r < r1; r++ {
			xr, yr := x[r*n:(r+1)*n], y[r*n:(r+1)*n]
			for t := range s {
				var acc float32
				for j := t; j < n; j += dotBlock {
					acc = sum(acc, xr[j], yr[j])
				}
				s[t] = acc
			}
			for half := dotBlock / 2; half > 0; half /= 2 {
				for t := 0; t < half; t++ {
					s[t] += s[t+half]
				}
			}
			out[r] = float64(round16(s[0]))
		}
	})
	return out
}
