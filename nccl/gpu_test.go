//go:build gpu

package nccl

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/internal/gputest"
)

// These tests need two NVIDIA GPUs and NCCL. Build them with -tags gpu
// (make gpu-test); where either is missing they skip and say why.

// openGPUs opens a worker and returns a Device for each of its first n
// GPUs, or skips the test where there are fewer, or no NCCL.
func openGPUs(t *testing.T, n int) []gpu.Device {
	t.Helper()
	w := gputest.Open(t)
	if _, err := Version(); err != nil {
		t.Skipf("no NCCL here: %v", err)
	}
	if have := w.Info().Devices; have < n {
		t.Skipf("needs %d GPUs; this machine shows %d", n, have)
	}
	devs := []gpu.Device{w}
	for i := 1; i < n; i++ {
		d, err := gpu.On(w, i)
		if err != nil {
			t.Fatalf("On(%d) = %v", i, err)
		}
		devs = append(devs, d)
	}
	return devs
}

// poison is a NaN bit pattern no collective computes by accident.
const poison = 0x7fc0dead

// want computes, in float64, what GPU g's Recv holds after c over the
// ranks' Send buffers in.
func want(c Collective, in [][]float32, g int) []float64 {
	out := make([]float64, c.RecvCount())
	n := int(c.Count)
	for r := range in {
		for i := range out {
			switch c.Kind {
			case AllReduce:
				out[i] += float64(in[r][i])
			case AllGather:
				if i/n == r {
					out[i] = float64(in[r][i%n])
				}
			case ReduceScatter:
				out[i] += float64(in[r][g*n+i])
			}
		}
	}
	return out
}

// compare reports the first of got's elements that differs from want by
// more than tol, with how many do.
func compare(got []float32, want []float64, tol float64) error {
	first, bad := -1, 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad == 0 {
		return nil
	}
	d := math.Abs(float64(got[first]) - want[first])
	return fmt.Errorf("Recv[%d] = %g, want %g (|diff| %.3g > tol %.1g); %d of %d differ", first, got[first], want[first], d, tol, bad, len(want))
}

// TestGPUCollectives: each collective on two GPUs (and an all-reduce on
// one, so that the communicators are made again for two) against the
// float64 sums of the same float32 inputs. Counts are not multiples of
// anything NCCL splits by.
func TestGPUCollectives(t *testing.T) {
	devs := openGPUs(t, 2)
	r := gputest.Rand(t)
	tests := []Collective{
		{Kind: AllReduce, Devices: 1, Count: 1000},
		{Kind: AllReduce, Devices: 2, Count: 1000},
		{Kind: AllGather, Devices: 2, Count: 333},
		{Kind: ReduceScatter, Devices: 2, Count: 517},
		{Kind: AllReduce, Devices: 2, Count: 1 << 20, Stream: 1},
	}
	for _, c := range tests {
		in := make([][]float32, c.Devices)
		for g := range c.Devices {
			in[g] = gputest.Floats(r, int(c.SendCount()))
			c.Send = append(c.Send, gputest.Upload(t, devs[g], in[g]))
			c.Recv = append(c.Recv, gputest.Upload(t, devs[g], poisoned(int(c.RecvCount()))))
		}
		res, err := gpu.RunMulti(devs[0], gpu.Multi{Devices: c.Devices, Steps: []gpu.DevOp{{Device: -1, Op: c}}, Reps: 1})
		if err != nil {
			t.Errorf("%s: %v", c.Name(), err)
			continue
		}
		// A sum of n float32 values in [-1, 1), each rounded once.
		tol := float64(c.Devices) * 0x1p-23
		for g := range c.Devices {
			got, err := gpu.Download[float32](devs[g], c.Recv[g], int(c.RecvCount()))
			if err != nil {
				t.Fatalf("%s: Download from GPU %d = %v", c.Name(), g, err)
			}
			if err := compare(got, want(c, in, g), tol); err != nil {
				t.Errorf("%s: GPU %d: %v", c.Name(), g, err)
			}
		}
		t.Logf("%s: %v", c.Name(), res.Times)
	}
}

// poisoned is n float32 NaNs of the poison pattern.
func poisoned(n int) []uint32 {
	v := make([]uint32, n)
	for i := range v {
		v[i] = poison
	}
	return v
}

// TestGPUNotRoot: a collective handed to one GPU other than GPU 0 is
// refused, saying how it runs.
func TestGPUNotRoot(t *testing.T) {
	devs := openGPUs(t, 2)
	c := Collective{Kind: AllReduce, Devices: 2, Count: 4}
	for g := range 2 {
		p := gputest.Alloc(t, devs[g], 16)
		c.Send, c.Recv = append(c.Send, p), append(c.Recv, p)
	}
	err := devs[1].Run(c)
	if err == nil || !strings.Contains(err.Error(), "prepared on GPU 1; a collective spans every GPU itself") {
		t.Errorf("Run on GPU 1 = %v; want the error that says it runs as a DevOp of Device -1", err)
	}
}
