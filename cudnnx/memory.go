package cudnnx

import (
	"fmt"

	"cudarepl/gpu"
)

// Round returns v as dt holds it: what the GPU will read after Upload.
func Round(dt gpu.DType, v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = RoundTo(dt, x)
	}
	return out
}

// RoundTo is x as dt holds it.
func RoundTo(dt gpu.DType, x float64) float64 {
	switch dt {
	case gpu.FP16:
		return float64(gpu.Float16From(gpu.Float16Bits(float32(x))))
	case gpu.BF16:
		return float64(gpu.BFloat16From(gpu.BFloat16Bits(float32(x))))
	case gpu.FP32:
		return float64(float32(x))
	}
	return x
}

// Upload copies v to new device memory as dt.
func Upload(dev gpu.Device, dt gpu.DType, v []float64) (gpu.DevicePtr, error) {
	switch dt {
	case gpu.FP16, gpu.BF16:
		h := make([]uint16, len(v))
		for i, x := range v {
			if dt == gpu.FP16 {
				h[i] = gpu.Float16Bits(float32(x))
			} else {
				h[i] = gpu.BFloat16Bits(float32(x))
			}
		}
		return gpu.Upload(dev, h)
	case gpu.FP32:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return gpu.Upload(dev, f)
	case gpu.FP64:
		return gpu.Upload(dev, v)
	}
	return 0, fmt.Errorf("cudnnx: upload %s: unsupported type", dt)
}

// Download reads n elements of dt at p, widened to float64.
func Download(dev gpu.Device, dt gpu.DType, p gpu.DevicePtr, n int) ([]float64, error) {
	out := make([]float64, n)
	switch dt {
	case gpu.FP16, gpu.BF16:
		h, err := gpu.Download[uint16](dev, p, n)
		if err != nil {
			return nil, err
		}
		for i, x := range h {
			if dt == gpu.FP16 {
				out[i] = float64(gpu.Float16From(x))
			} else {
				out[i] = float64(gpu.BFloat16From(x))
			}
		}
	case gpu.FP32:
		f, err := gpu.Download[float32](dev, p, n)
		if err != nil {
			return nil, err
		}
		for i, x := range f {
			out[i] = float64(x)
		}
	case gpu.FP64:
		return gpu.Download[float64](dev, p, n)
	default:
		return nil, fmt.Errorf("cudnnx: download %s: unsupported type", dt)
	}
	return out, nil
}

// Bytes is the memory a tensor of shape s and type dt takes.
func Bytes(dt gpu.DType, s Shape) int64 { return s.Span() * int64(dt.Size()) }
