package conv

import (
	"fmt"
	"math"
	"math/rand/v2"

	"cudarepl/cudnnx"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// Shape is a 3×3 convolution with padding 1 and stride 1 (the output
// keeps H and W): an N×C×H×W input and K filters. Lessons 10 and 11 size
// their problems as lessons.Size{N, C, H, W, K}.
type Shape struct{ N, C, H, W, K int }

// Of reads a Size{N, C, H, W, K}.
func Of(s lessons.Size) Shape { return Shape{s[0], s[1], s[2], s[3], s[4]} }

// FLOPs is 2·N·K·H·W·C·9: one multiply and one add per filter tap.
func FLOPs(s lessons.Size) float64 {
	c := Of(s)
	return 2 * float64(c.N) * float64(c.K) * float64(c.H) * float64(c.W) * float64(c.C) * 9
}

// Memory is one set of a convolution's buffers (x, w, the bias and y)
// in a type of elemBytes bytes on the device, times sets; on the host, the
// float64 inputs, one of them reordered on its way up, and y read back.
func Memory(elemBytes, sets int64) func(s lessons.Size) lessons.Memory {
	return func(s lessons.Size) lessons.Memory {
		c := Of(s)
		x, w, y := int64(c.N*c.C*c.H*c.W), int64(c.K*c.C*9), int64(c.N*c.K*c.H*c.W)
		return lessons.Memory{Device: sets * elemBytes * (x + w + int64(c.K) + y), Host: 8*(x+w) + 8*x + (elemBytes+8)*y}
	}
}

// Footprint is the device memory one convolution of shape s touches in a
// type of elemBytes bytes: x, w, the bias and y, once each.
func Footprint(elemBytes int64) func(s lessons.Size) int64 {
	return func(s lessons.Size) int64 { return Memory(elemBytes, 1)(s).Device }
}

// Label writes a Size{N, C, H, W, K} as "32×64×112×112 → 64".
func Label(s lessons.Size) string {
	return fmt.Sprintf("%d×%d×%d×%d → %d", s[0], s[1], s[2], s[3], s[4])
}

// Data is a convolution's inputs, kept in logical order (x as NCHW, w
// as KCRS, bias per output channel) and rounded to the type uploaded.
type Data struct {
	Shape
	X, Wt, Bias []float64
	sample      []int // output elements the check compares; nil: all
}

// NewData draws random inputs rounded to dt. Past numeric.FullCheckMACs
// the check compares a random sample of outputs, always including the
// corners.
func NewData(s Shape, dt gpu.DType) *Data {
	d := &Data{Shape: s}
	rnd := func(n int, scale float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = cudnnx.RoundTo(dt, (rand.Float64()*2-1)*scale)
		}
		return v
	}
	d.X = rnd(s.N*s.C*s.H*s.W, 1)
	d.Wt = rnd(s.K*s.C*9, 1/math.Sqrt(float64(9*s.C)))
	// Biases alternate in sign, 0.1 to 0.5 in size: with half of them
	// negative, a ReLU applied before the bias instead of after it
	// (max(y, 0) + b) leaves negative outputs that a check sees.
	d.Bias = make([]float64, s.K)
	for k := range d.Bias {
		b := 0.1 + 0.4*rand.Float64()
		if k%2 == 0 {
			b = -b
		}
		d.Bias[k] = cudnnx.RoundTo(dt, b)
	}
	outs := s.N * s.K * s.H * s.W
	if float64(outs)*float64(9*s.C) > numeric.FullCheckMACs {
		for range 4096 {
			d.sample = append(d.sample, rand.IntN(outs))
		}
		d.sample = append(d.sample, 0, outs-1)
	}
	return d
}

// Layout returns v, logical NCHW with dims n×c×h×w, in memory order: NHWC
// when nhwc, else unchanged.
func Layout(v []float64, n, c, h, w int, nhwc bool) []float64 {
	return permute(v, n, c, h, w, nhwc, true)
}

// Logical is the inverse of Layout: memory order back to NCHW.
func Logical(v []float64, n, c, h, w int, nhwc bool) []float64 {
	return permute(v, n, c, h, w, nhwc, false)
}

// permute moves v between NCHW and NHWC order, toward NHWC when toNHWC.
func permute(v []float64, n, c, h, w int, nhwc, toNHWC bool) []float64 {
	if !nhwc {
		return v
	}
	out := make([]float64, len(v))
	for in := range n {
		for ic := range c {
			for ih := range h {
				for iw := range w {
					nchw, nhwcAt := ((in*c+ic)*h+ih)*w+iw, ((in*h+ih)*w+iw)*c+ic
					if toNHWC {
						out[nhwcAt] = v[nchw]
					} else {
						out[nchw] = v[nhwcAt]
					}
				}
			}
		}
	}
	return out
}

// at is output element i (logical NCHW) of the convolution, plus the bias
// and through a ReLU when biasRelu.
func (d *Data) at(i int, biasRelu bool) float64 {
	q := i % d.W
	p := i / d.W % d.H
	k := i / (d.W * d.H) % d.K
	n := i / (d.W * d.H * d.K)
	var acc float64
	for c := range d.C {
		for r := range 3 {
			h := p - 1 + r
			if h < 0 || h >= d.H {
				continue
			}
			for s := range 3 {
				w := q - 1 + s
				if w < 0 || w >= d.W {
					continue
				}
				acc += d.X[((n*d.C+c)*d.H+h)*d.W+w] * d.Wt[((k*d.C+c)*3+r)*3+s]
			}
		}
	}
	if biasRelu {
		acc = math.Max(acc+d.Bias[k], 0)
	}
	return acc
}

// Check compares got (logical NCHW) with the float64 convolution, as a
// whole (‖got − ref‖/‖ref‖ ≤ tol) on the checked elements. A NaN anywhere
// fails: outputs are poisoned before each run.
func (d *Data) Check(got []float64, biasRelu bool, tol float64) (numeric.CheckStats, error) {
	idx := d.sample
	if idx == nil {
		idx = make([]int, len(got))
		for i := range idx {
			idx[i] = i
		}
	}
	sub, want := make([]float32, len(idx)), make([]float64, len(idx))
	for j, i := range idx {
		sub[j], want[j] = float32(got[i]), d.at(i, biasRelu)
	}
	for i, v := range got {
		if math.IsNaN(v) {
			return numeric.CheckStats{Tol: tol, N: len(idx)}, fmt.Errorf("check: y[%d] is NaN: an output element was never written", i)
		}
	}
	return numeric.CompareNorm("y", sub, want, nil, tol)
}

// Graph is the convolution of s as a cuDNN graph in type dt, stored
// NHWC or NCHW, with the bias and ReLU fused after it when biasRelu. b is
// nil without them.
func Graph(name string, s Shape, dt gpu.DType, nhwc, biasRelu bool) (g *cudnnx.Graph, x, w, b, y *cudnnx.Tensor) {
	layout := cudnnx.NCHW
	if nhwc {
		layout = cudnnx.NHWC
	}
	g = cudnnx.New(name)
	x = g.Tensor("x", dt, layout(s.N, s.C, s.H, s.W))
	w = g.Tensor("w", dt, layout(s.K, s.C, 3, 3))
	y = g.Conv(x, w, cudnnx.Same(3))
	if biasRelu {
		b = g.Tensor("bias", dt, layout(1, s.K, 1, 1))
		y = g.Relu(g.Add(y, b))
	}
	y.Output(dt)
	return g, x, w, b, y
}

// Buffers is a convolution's data on the GPU in one type and layout.
type Buffers struct {
	Type             gpu.DType
	NHWC             bool
	X, W, Bias, Y    gpu.DevicePtr
	Bytes            int64 // device memory held
	n, k, h, w, yLen int
}

// Upload copies d to dev as dt, in NHWC or NCHW order, and allocates the
// output.
func (d *Data) Upload(dev gpu.Device, dt gpu.DType, nhwc bool) (*Buffers, error) {
	b := &Buffers{Type: dt, NHWC: nhwc, n: d.N, k: d.K, h: d.H, w: d.W, yLen: d.N * d.K * d.H * d.W}
	var err error
	put := func(v []float64) gpu.DevicePtr {
		if err != nil {
			return 0
		}
		var p gpu.DevicePtr
		p, err = cudnnx.Upload(dev, dt, v)
		b.Bytes += int64(len(v) * dt.Size())
		return p
	}
	b.X = put(Layout(d.X, d.N, d.C, d.H, d.W, nhwc))
	b.W = put(Layout(d.Wt, d.K, d.C, 3, 3, nhwc))
	b.Bias = put(d.Bias)
	if err == nil {
		b.Y, err = dev.Alloc(int64(b.yLen * dt.Size()))
		b.Bytes += int64(b.yLen * dt.Size())
	}
	if err != nil {
		b.Free(dev)
		return nil, err
	}
	return b, nil
}

// Bind says where the tensors of Graph live; b may be nil.
func (b *Buffers) Bind(x, w, bias, y *cudnnx.Tensor) cudnnx.Bind {
	m := cudnnx.Bind{x: b.X, w: b.W, y: b.Y}
	if bias != nil {
		m[bias] = b.Bias
	}
	return m
}

// Poison fills the output with NaNs.
func (b *Buffers) Poison(dev gpu.Device) error {
	return dev.Run(gpu.Memset{Dst: b.Y, Value: 0x7fc07fc0, Count: int64(b.yLen * b.Type.Size() / 4)})
}

// Output reads y back in logical NCHW order.
func (b *Buffers) Output(dev gpu.Device) ([]float64, error) {
	v, err := cudnnx.Download(dev, b.Type, b.Y, b.yLen)
	if err != nil {
		return nil, err
	}
	return Logical(v, b.n, b.k, b.h, b.w, b.NHWC), nil
}

// Free releases the buffers.
func (b *Buffers) Free(dev gpu.Device) {
	for _, p := range []gpu.DevicePtr{b.X, b.W, b.Bias, b.Y} {
		if p != 0 {
			dev.Free(p)
		}
	}
}
