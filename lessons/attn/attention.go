package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// Shape is scaled dot-product attention over B batches of H heads: S
// queries attend to S keys of head dimension D, each to every key, or with
// Causal only to the keys at or before its own position. Q, K, V and the
// output O are laid out [B][H][S][D]. Lessons 13 and 14 size their
// problems as lessons.Size{B, H, S, D, causal}, causal 0 or 1.
type Shape struct {
	B, H, S, D int
	Causal     bool
}

// Of reads a Size{B, H, S, D} or, causal, {B, H, S, D, 1}.
func Of(s lessons.Size) Shape {
	return Shape{B: s[0], H: s[1], S: s[2], D: s[3], Causal: len(s) > 4 && s[4] != 0}
}

// Heads is B·H, the number of independent attentions.
func (a Shape) Heads() int { return a.B * a.H }

// Elems is how many elements each of Q, K, V and O holds.
func (a Shape) Elems() int64 { return int64(a.Heads()) * int64(a.S) * int64(a.D) }

// Scale is the 1/√D the scores are multiplied by.
func (a Shape) Scale() float64 { return 1 / math.Sqrt(float64(a.D)) }

// FLOPs is attention's work as its papers count it: two products of
// 2·S·S·D per head, Q·Kᵀ and P·V; causal, half of it, since the scores
// above the diagonal are never needed.
func FLOPs(s lessons.Size) float64 {
	a := Of(s)
	f := 4 * float64(a.Heads()) * float64(a.S) * float64(a.S) * float64(a.D)
	if a.Causal {
		f /= 2
	}
	return f
}

// Bytes is the least DRAM traffic of an attention forward pass, for
// Problem.Bytes: Q, K and V read once and O written once, in fp16.
func Bytes(s lessons.Size) float64 {
	a := Of(s)
	return 4 * 2 * float64(a.Heads()) * float64(a.S) * float64(a.D)
}

// Label writes a Size{B, H, S, D} as "B=4 H=16 S=4096 d=64",
// with ", causal" where it is.
func Label(s lessons.Size) string {
	a := Of(s)
	l := fmt.Sprintf("B=%d H=%d S=%d d=%d", a.B, a.H, a.S, a.D)
	if a.Causal {
		l += ", causal"
	}
	return l
}

// The kinds of head the inputs cycle through, head h of kind h mod
// kinds: each catches a different mistake.
const (
	headRandom = iota // q, k, v ~ U(−√3, √3): scores of a few units, the usual case
	headWide          // q three times wider: scores over ±20, the row's max moves often, so a missing rescale shows
	headHigh          // every score +16√D (128 at D = 64): exp overflows without the max subtracted
	headLow           // every score −16√D: exp underflows to 0 if the running max starts at 0
	kinds
)

// Data is attention's inputs as fp16 (every value exactly an fp16),
// and what the check compares: every query row where the whole reference
// is cheap, else a sample of rows from heads of every kind.
type Data struct {
	Shape
	Q, K, V []uint16 // fp16 bits, [B·H][S][D]
	rows    []int    // the query rows (head·S + i) the check compares, in order
	want    []float64
}

// fullCheck is the most multiply-adds (heads·S·S·D) for which every
// row is compared; past it, a sample of rows is.
const fullCheck = 6e8

// NewData draws the inputs for a, the same for the same seed.
func NewData(a Shape, seed uint64) *Data {
	n := a.Elems()
	d := &Data{Shape: a, Q: make([]uint16, n), K: make([]uint16, n), V: make([]uint16, n)}
	per := a.S * a.D
	numeric.Parallel(a.Heads(), 1, func(h, _ int) {
		rng := rand.New(rand.NewPCG(seed, uint64(h)))
		uni := func(w float64) uint16 { return gpu.Float16Bits(float32(w * math.Sqrt(3) * (2*rng.Float64() - 1))) }
		q, k, v := d.Q[h*per:(h+1)*per], d.K[h*per:(h+1)*per], d.V[h*per:(h+1)*per]
		// The large heads' scores are all equal within a row, and so
		// exact in fp16: only a kernel's mistakes show, not the rounding
		// of scores near ±128 that an fp16 score matrix would add.
		four, minusFour := gpu.Float16Bits(4), gpu.Float16Bits(-4)
		for i := range q {
			switch h % kinds {
			case headRandom:
				q[i], k[i] = uni(1), uni(1)
			case headWide:
				q[i], k[i] = uni(3), uni(1)
			case headHigh:
				q[i], k[i] = four, four
			case headLow:
				q[i], k[i] = minusFour, four
			}
			v[i] = uni(1)
		}
	})
	heads, s := a.Heads(), a.S
	if float64(heads)*float64(s)*float64(s)*float64(a.D) <= fullCheck {
		d.rows = make([]int, heads*s)
		for i := range d.rows {
			d.rows[i] = i
		}
		return d
	}
	// The first, last and 62 random rows of up to 8 heads, two of each kind.
	rng := rand.New(rand.NewPCG(seed, math.MaxUint32))
	seen := map[int]bool{}
	for h := range min(heads, 2*kinds) {
		for _, i := range append([]int{0, s - 1}, rng.Perm(s)[:min(s, 62)]...) {
			if !seen[h*s+i] {
				seen[h*s+i] = true
				d.rows = append(d.rows, h*s+i)
			}
		}
	}
	sort.Ints(d.rows)
	return d
}

// floats widens fp16 values to float32, for kernels that read fp32.
func floats(h []uint16) []float32 {
	f := make([]float32, len(h))
	numeric.Parallel(len(h), 1<<16, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			f[i] = gpu.Float16From(h[i])
		}
	})
	return f
}

// reference computes, in float64, the output rows the check compares.
func (d *Data) reference() []float64 {
	s, dim, scale := d.S, d.D, d.Scale()
	want := make([]float64, len(d.rows)*dim)
	numeric.Parallel(len(d.rows), 8, func(r0, r1 int) {
		p := make([]float64, s)
		q := make([]float64, dim)
		for r := r0; r < r1; r++ {
			h, i := d.rows[r]/s, d.rows[r]%s
			base := h * s * dim
			for c := range q {
				q[c] = float64(gpu.Float16From(d.Q[base+i*dim+c]))
			}
			keys := s
			if d.Causal {
				keys = i + 1
			}
			m := math.Inf(-1)
			for j := range keys {
				dot := 0.0
				for c, qc := range q {
					dot += qc * float64(gpu.Float16From(d.K[base+j*dim+c]))
				}
				p[j] = scale * dot
				m = math.Max(m, p[j])
			}
			sum := 0.0
			for j := range keys {
				p[j] = math.Exp(p[j] - m)
				sum += p[j]
			}
			out := want[r*dim : (r+1)*dim]
			for j := range keys {
				w := p[j] / sum
				for c := range out {
					out[c] += w * float64(gpu.Float16From(d.V[base+j*dim+c]))
				}
			}
		}
	})
	return want
}

// Check compares the output o (all of it, [B·H][S][D]) with the float64
// reference: no element may be NaN or infinite (o is poisoned with NaN, so
// an element never written fails), and each compared row must be within
// tol·(|want| + 1) of it, element by element.
func (d *Data) Check(o []float32, tol float64) (numeric.CheckStats, error) {
	if int64(len(o)) != d.Elems() {
		return numeric.CheckStats{}, fmt.Errorf("check: O has %d elements, want %d", len(o), d.Elems())
	}
	if d.want == nil {
		d.want = d.reference()
	}
	index := func(e int) []int {
		h, rest := e/(d.S*d.D), e%(d.S*d.D)
		return []int{h / d.H, h % d.H, rest / d.D, rest % d.D}
	}
	st := numeric.CheckStats{Tol: tol, N: len(d.want)}
	bad, first := 0, -1
	for e, v := range o {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			bad++
			if first < 0 {
				first = e
			}
		}
	}
	if bad > 0 {
		st.MaxRelErr = math.Inf(1)
		r := sort.SearchInts(d.rows, first/d.D)
		want := math.NaN()
		if r < len(d.rows) && d.rows[r] == first/d.D {
			want = d.want[r*d.D+first%d.D]
		}
		return st, &numeric.CheckError{Name: "O", Index: index(first), Got: float64(o[first]), Want: want, Tol: tol, Bad: bad, Total: len(o)}
	}
	var ce *numeric.CheckError
	for r, row := range d.rows {
		for c := range d.D {
			g, w := float64(o[row*d.D+c]), d.want[r*d.D+c]
			rel := math.Abs(g-w) / (math.Abs(w) + 1)
			st.MaxRelErr = math.Max(st.MaxRelErr, rel)
			if rel <= tol {
				continue
			}
			bad++
			if ce == nil {
				ce = &numeric.CheckError{Name: "O", Index: index(row*d.D + c), Got: g, Want: w, Tol: tol}
			}
		}
	}
	if ce != nil {
		ce.Bad, ce.Total = bad, len(d.want)
		return st, ce
	}
	return st, nil
}

// Buffers is attention's data on the device: Q, K and V as fp16, set up
// once; each output type's O, and fp32 copies of the inputs, allocated the
// first time an impl asks for them (so that a measurement of what an impl
// holds beyond Q, K and V counts its output); and guardWords poisoned words
// behind each O, which a kernel running past the last row would write.
type Buffers struct {
	Q, K, V  gpu.DevicePtr
	o16, o32 gpu.DevicePtr
	q32, k32 gpu.DevicePtr
	v32      gpu.DevicePtr
	data     *Data
	dev      gpu.Device
	outType  gpu.DType // of the O written last
}

// guardWords is the words behind O, poisoned with O.
const guardWords = 1024

// InputBytes is what Q, K and V take on the device as fp16.
func InputBytes(a Shape) int64 { return 3 * 2 * a.Elems() }

// OutputBytes is one output of elem bytes per element, and its guard.
func OutputBytes(a Shape, elem int64) int64 { return elem*a.Elems() + 4*guardWords }

// Upload puts d's inputs on dev as fp16.
func (d *Data) Upload(dev gpu.Device) (*Buffers, error) {
	b := &Buffers{data: d, dev: dev}
	if err := uploadInputs(b, [3]*gpu.DevicePtr{&b.Q, &b.K, &b.V}, func(h []uint16) []uint16 { return h }); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// uploadInputs puts Q, K and V, each converted by conv, on b's device at
// dst; what was uploaded before an error stays for Free.
func uploadInputs[T gpu.Element](b *Buffers, dst [3]*gpu.DevicePtr, conv func([]uint16) []T) error {
	var err error
	for i, src := range [][]uint16{b.data.Q, b.data.K, b.data.V} {
		if *dst[i], err = gpu.Upload(b.dev, conv(src)); err != nil {
			return err
		}
	}
	return nil
}

// O returns the output of type t (FP16 or FP32), allocating it the first
// time, and makes it the one Poison and Check work on.
func (b *Buffers) O(t gpu.DType) (gpu.DevicePtr, error) {
	p := &b.o16
	if t == gpu.FP32 {
		p = &b.o32
	}
	if *p == 0 {
		o, err := b.dev.Alloc(OutputBytes(b.data.Shape, int64(t.Size())))
		if err != nil {
			return 0, err
		}
		*p = o
	}
	b.outType = t
	return *p, nil
}

// guardFrom is how many 4-byte words the current output takes: its guard
// follows them.
func (b *Buffers) guardFrom() int64 { return (int64(b.outType.Size())*b.data.Elems() + 3) / 4 }

// Float32Inputs returns Q, K and V widened to fp32, uploading them the
// first time.
func (b *Buffers) Float32Inputs() (q, k, v gpu.DevicePtr, err error) {
	if b.v32 == 0 {
		if err := uploadInputs(b, [3]*gpu.DevicePtr{&b.q32, &b.k32, &b.v32}, floats); err != nil {
			return 0, 0, 0, err
		}
	}
	return b.q32, b.k32, b.v32, nil
}

// out is the current output.
func (b *Buffers) out() gpu.DevicePtr {
	if b.outType == gpu.FP32 {
		return b.o32
	}
	return b.o16
}

// Poison fills the current output and its guard with NaN.
func (b *Buffers) Poison() error {
	if b.out() == 0 {
		return fmt.Errorf("attention: no output set up to poison")
	}
	return b.dev.Run(gpu.Memset{Dst: b.out(), Value: lessons.PoisonWord(b.outType), Count: b.guardFrom() + guardWords})
}

// Check reads the current output back and compares it with the reference,
// within tol; then checks that nothing was written behind it.
func (b *Buffers) Check(tol float64) (numeric.CheckStats, error) {
	n := int(b.data.Elems())
	var o []float32
	if b.outType == gpu.FP32 {
		all, err := gpu.Download[float32](b.dev, b.o32, n)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		o = all
	} else {
		h, err := gpu.Download[uint16](b.dev, b.o16, n)
		if err != nil {
			return numeric.CheckStats{}, err
		}
		o = floats(h)
	}
	st, err := b.data.Check(o, tol)
	if err != nil {
		return st, err
	}
	guard, err := gpu.Download[uint32](b.dev, b.out()+gpu.DevicePtr(4*b.guardFrom()), guardWords)
	if err != nil {
		return st, err
	}
	for i, w := range guard {
		if w != lessons.PoisonWord(b.outType) {
			return st, fmt.Errorf("check: word %d behind O was written, past the end of O (%s)", i, Label(lessons.Size{b.data.B, b.data.H, b.data.S, b.data.D}))
		}
	}
	return st, nil
}

// Free releases everything on the device.
func (b *Buffers) Free() {
	for _, p := range []gpu.DevicePtr{b.Q, b.K, b.V, b.o16, b.o32, b.q32, b.k32, b.v32} {
		if p != 0 {
			b.dev.Free(p)
		}
	}
}
