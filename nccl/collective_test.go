package nccl

import (
	"bytes"
	"encoding/gob"
	"math"
	"reflect"
	"strings"
	"testing"

	"cudarepl/gpu"
)

// ptrs is n distinct non-zero device addresses.
func ptrs(n int, base gpu.DevicePtr) []gpu.DevicePtr {
	p := make([]gpu.DevicePtr, n)
	for i := range p {
		p[i] = base + gpu.DevicePtr(i)<<20
	}
	return p
}

// TestValidate: each wrong argument is refused in one line that names the
// collective and what is wrong.
func TestValidate(t *testing.T) {
	ok := Collective{Kind: AllReduce, Devices: 2, Send: ptrs(2, 1<<32), Recv: ptrs(2, 2<<32), Count: 1024}
	tests := []struct {
		desc string
		edit func(c *Collective)
		want string // "" for no error
	}{
		{"valid all-reduce", func(c *Collective) {}, ""},
		{"valid all-gather", func(c *Collective) { c.Kind = AllGather }, ""},
		{"valid reduce-scatter", func(c *Collective) { c.Kind = ReduceScatter }, ""},
		{"in place", func(c *Collective) { c.Recv = c.Send }, ""},
		{"one GPU", func(c *Collective) { c.Devices, c.Send, c.Recv = 1, c.Send[:1], c.Recv[:1] }, ""},
		{"zero kind", func(c *Collective) { c.Kind = 0 },
			"nccl: Kind(0) of 1024 float32 on 2 GPUs: unknown kind, want AllReduce, AllGather or ReduceScatter"},
		{"unknown kind", func(c *Collective) { c.Kind = 9 },
			"nccl: Kind(9) of 1024 float32 on 2 GPUs: unknown kind, want AllReduce, AllGather or ReduceScatter"},
		{"no GPUs", func(c *Collective) { c.Devices = 0 },
			"nccl: all-reduce of 1024 float32 on 0 GPUs: Devices must be at least 1"},
		{"zero count", func(c *Collective) { c.Count = 0 },
			"nccl: all-reduce of 0 float32 on 2 GPUs: Count must be positive"},
		{"negative count", func(c *Collective) { c.Kind, c.Count = AllGather, -4 },
			"nccl: all-gather of -4 float32 on 2 GPUs: Count must be positive"},
		{"short Send", func(c *Collective) { c.Send = c.Send[:1] },
			"nccl: all-reduce of 1024 float32 on 2 GPUs: Send has 1 buffers, want 2 (one per GPU)"},
		{"long Recv", func(c *Collective) { c.Kind, c.Recv = ReduceScatter, ptrs(3, 3<<32) },
			"nccl: reduce-scatter of 1024 float32 on 2 GPUs: Recv has 3 buffers, want 2 (one per GPU)"},
		{"more GPUs than buffers", func(c *Collective) { c.Devices = 4 },
			"nccl: all-reduce of 1024 float32 on 4 GPUs: Send has 2 buffers, want 4 (one per GPU)"},
		{"null buffer", func(c *Collective) { c.Recv = []gpu.DevicePtr{c.Recv[0], 0} },
			"nccl: all-reduce of 1024 float32 on 2 GPUs: GPU 1's Send or Recv is 0, not device memory"},
		{"negative stream", func(c *Collective) { c.Stream = -1 },
			"nccl: all-reduce of 1024 float32 on 2 GPUs: Stream -1 is negative"},
	}
	for _, tt := range tests {
		c := ok
		tt.edit(&c)
		err := c.validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: validate() = %v; want nil", tt.desc, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%s: validate() = %v; want %q", tt.desc, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: validate() = %q spans lines", tt.desc, err)
		}
	}
}

// TestCounts: Count is NCCL's count, and the buffers hold what NCCL
// assumes: all-gather's Recv and reduce-scatter's Send are Devices×Count.
func TestCounts(t *testing.T) {
	tests := []struct {
		kind       Kind
		devices    int
		count      int64
		send, recv int64
	}{
		{AllReduce, 4, 100, 100, 100},
		{AllGather, 4, 100, 100, 400},
		{ReduceScatter, 4, 100, 400, 100},
		{AllGather, 1, 7, 7, 7},
	}
	for _, tt := range tests {
		c := Collective{Kind: tt.kind, Devices: tt.devices, Count: tt.count}
		if s, r := c.SendCount(), c.RecvCount(); s != tt.send || r != tt.recv {
			t.Errorf("%s: SendCount, RecvCount = %d, %d; want %d, %d", c.Name(), s, r, tt.send, tt.recv)
		}
	}
}

// ncclTestsBw is how nccl-tests computes the two bandwidths (GB/s) from
// the count it hands NCCL (src/all_reduce.cu, all_gather.cu,
// reduce_scatter.cu: the GetBw functions), written out independently of
// BusFactor and AlgBytes.
func ncclTestsBw(k Kind, count int64, typesize int, sec float64, nranks int) (algBw, busBw float64) {
	n := float64(nranks)
	switch k {
	case AllReduce:
		algBw = float64(count) * float64(typesize) / 1e9 / sec
		return algBw, algBw * (2 * (n - 1)) / n
	case AllGather, ReduceScatter:
		algBw = float64(count) * float64(typesize) * n / 1e9 / sec
		return algBw, algBw * (n - 1) / n
	}
	return 0, 0
}

// TestBandwidth: BusFactor and AlgBytes give nccl-tests' algbw and busbw.
func TestBandwidth(t *testing.T) {
	tests := []struct {
		kind      Kind
		n         int
		count     int64
		factor    float64
		algBytes  int64
		sec       float64
		wantAlgBw float64 // GB/s
	}{
		{AllReduce, 2, 1 << 20, 1, 4 << 20, 1e-3, 4.194304},
		{AllReduce, 4, 1 << 20, 1.5, 4 << 20, 1e-3, 4.194304},
		{AllReduce, 8, 1000, 1.75, 4000, 1e-5, 0.4},
		{AllGather, 2, 1 << 20, 0.5, 8 << 20, 1e-3, 8.388608},
		{AllGather, 8, 1000, 0.875, 32000, 1e-5, 3.2},
		{ReduceScatter, 2, 1 << 20, 0.5, 8 << 20, 1e-3, 8.388608},
		{ReduceScatter, 4, 250, 0.75, 4000, 1e-6, 4},
		{AllReduce, 1, 64, 0, 256, 1e-6, 0.256},
	}
	for _, tt := range tests {
		name := Collective{Kind: tt.kind, Devices: tt.n, Count: tt.count}.Name()
		if got := BusFactor(tt.kind, tt.n); got != tt.factor {
			t.Errorf("BusFactor(%s, %d) = %v; want %v", tt.kind, tt.n, got, tt.factor)
		}
		if got := AlgBytes(tt.kind, tt.n, tt.count); got != tt.algBytes {
			t.Errorf("AlgBytes(%s) = %d; want %d", name, got, tt.algBytes)
		}
		algBw := float64(AlgBytes(tt.kind, tt.n, tt.count)) / 1e9 / tt.sec
		busBw := algBw * BusFactor(tt.kind, tt.n)
		refAlg, refBus := ncclTestsBw(tt.kind, tt.count, elemBytes, tt.sec, tt.n)
		if !near(algBw, tt.wantAlgBw) || !near(algBw, refAlg) || !near(busBw, refBus) {
			t.Errorf("%s in %gs: algbw, busbw = %.6g, %.6g GB/s; want %.6g (nccl-tests %.6g), %.6g",
				name, tt.sec, algBw, busBw, tt.wantAlgBw, refAlg, refBus)
		}
	}
	for _, k := range []Kind{0, 4} {
		if f, b := BusFactor(k, 4), AlgBytes(k, 4, 100); f != 0 || b != 0 {
			t.Errorf("%s: BusFactor, AlgBytes = %v, %d; want 0, 0", k, f, b)
		}
	}
	if f := BusFactor(AllReduce, 0); f != 0 {
		t.Errorf("BusFactor(all-reduce, 0) = %v; want 0", f)
	}
}

// near reports whether a and b agree to 1e-12 relative.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }

// TestGob: a Collective crosses the pipe to the worker inside a gpu.Op,
// as the package registered it.
func TestGob(t *testing.T) {
	in := []gpu.Op{Collective{Kind: ReduceScatter, Devices: 3, Send: ptrs(3, 1<<32), Recv: ptrs(3, 5<<32), Count: 12345, Stream: 2}}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(in); err != nil {
		t.Fatalf("Encode = %v", err)
	}
	var out []gpu.Op
	if err := gob.NewDecoder(&buf).Decode(&out); err != nil {
		t.Fatalf("Decode = %v", err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("gob round trip = %#v; want %#v", out, in)
	}
}

// TestKindString: kinds read as NCCL's documentation names them.
func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{AllReduce: "all-reduce", AllGather: "all-gather", ReduceScatter: "reduce-scatter", 0: "Kind(0)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q; want %q", int(k), got, want)
		}
	}
}
