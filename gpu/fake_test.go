package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"time"

	"cudarepl/nvrtc"
)

// fakeDevice is a Device that runs on the CPU, so that the worker protocol
// and its restart logic can be tested without a GPU. Its kernels are named
// behaviours: "fill" writes arg1 (float) to arg2 (int) floats at arg0,
// "fault" fails as an out-of-bounds write does, "crash" kills the process,
// "hang" never returns, "slow" takes 100 ms.
type fakeDevice struct {
	mem  map[DevicePtr][]byte
	host map[HostPtr][]byte
	next uint64
}

// Registered before any init() runs, so a re-executed test binary finds it.
var _ = func() bool {
	workerBackends["fake"] = func() (Device, error) {
		return &fakeDevice{mem: map[DevicePtr][]byte{}, host: map[HostPtr][]byte{}, next: 0x10000}, nil
	}
	workerBackends["fake-nogpu"] = func() (Device, error) {
		return nil, &UnavailableError{Reason: "no NVIDIA driver found (libcuda.so.1)"}
	}
	return true
}()

func (f *fakeDevice) Info() DeviceInfo                        { return DeviceInfo{Name: "fake GPU", Major: 9, SMs: 1} }
func (f *fakeDevice) MemInfo() (int64, int64, error)          { return 1 << 30, 2 << 30, nil }
func (f *fakeDevice) Close() error                            { return nil }
func (f *fakeDevice) Occupancy(Kernel, int, int) (int, error) { return 2, nil }

func (f *fakeDevice) Alloc(n int64) (DevicePtr, error) {
	p := DevicePtr(f.next)
	f.next += uint64(n) + 256
	f.mem[p] = make([]byte, n)
	return p, nil
}

func (f *fakeDevice) Free(p DevicePtr) error {
	if _, ok := f.mem[p]; !ok {
		return &CUDAError{Call: "cuMemFree_v2", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE"}
	}
	delete(f.mem, p)
	return nil
}

// buf is the n bytes at p, which may point inside an allocation.
func (f *fakeDevice) buf(p DevicePtr, n int) ([]byte, error) {
	for base, b := range f.mem {
		if p >= base && uint64(p-base)+uint64(n) <= uint64(len(b)) {
			return b[p-base:][:n], nil
		}
	}
	return nil, &CUDAError{Call: "cuMemcpy", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE"}
}

// hostBuf is the host memory at p, which may point inside an allocation.
func (f *fakeDevice) hostBuf(p HostPtr) []byte {
	for base, b := range f.host {
		if p >= base && uint64(p-base) < uint64(len(b)) {
			return b[p-base:]
		}
	}
	return nil
}

func (f *fakeDevice) Write(dst DevicePtr, src []byte) error {
	b, err := f.buf(dst, len(src))
	if err == nil {
		copy(b, src)
	}
	return err
}

func (f *fakeDevice) Read(dst []byte, src DevicePtr) error {
	b, err := f.buf(src, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (f *fakeDevice) AllocHost(n int64, pinned bool) (HostPtr, error) {
	p := HostPtr(f.next)
	f.next += uint64(n) + 256
	f.host[p] = make([]byte, n)
	return p, nil
}
func (f *fakeDevice) FreeHost(p HostPtr) error              { delete(f.host, p); return nil }
func (f *fakeDevice) WriteHost(p HostPtr, src []byte) error { copy(f.hostBuf(p), src); return nil }
func (f *fakeDevice) ReadHost(dst []byte, p HostPtr) error  { copy(dst, f.hostBuf(p)); return nil }

func (f *fakeDevice) LoadKernel(img *nvrtc.Image, name string) (Kernel, error) {
	return Kernel{Name: name, Image: img.Key, Attrs: KernelAttrs{MaxThreadsPerBlock: 1024}}, nil
}

func (f *fakeDevice) Launch(l Launch) error { return f.Run(l) }

func (f *fakeDevice) Run(ops ...Op) error {
	for _, op := range ops {
		l, ok := op.(Launch)
		if !ok {
			return fmt.Errorf("fake: cannot run %T", op)
		}
		switch l.Kernel.Name {
		case "fill":
			n := int(int32(uint32(l.Args[2].Bits)))
			b, err := f.buf(DevicePtr(l.Args[0].Bits), 4*n)
			if err != nil {
				return err
			}
			for i := 0; i < n; i++ {
				binary.LittleEndian.PutUint32(b[4*i:], uint32(l.Args[1].Bits))
			}
		case "fault":
			return &CUDAError{Call: "cuStreamSynchronize", Detail: "after " + l.String(), Code: 700,
				Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Msg: "an illegal memory access was encountered"}
		case "crash":
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Kill() // as the OOM killer would
			}
			time.Sleep(time.Second)
		case "hang":
			time.Sleep(time.Hour)
		case "slow":
			time.Sleep(100 * time.Millisecond)
		default:
			return fmt.Errorf("fake: no kernel %q", l.Kernel.Name)
		}
	}
	return nil
}

func (f *fakeDevice) Capture(ops ...Op) (Graph, error) { return Graph{ID: 1, Ops: len(ops)}, nil }
func (f *fakeDevice) FreeGraph(Graph) error            { return nil }
func (f *fakeDevice) Update(g Graph, ops ...Op) (Graph, error) {
	return Graph{ID: g.ID, Ops: len(ops)}, nil
}
func (f *fakeDevice) MemPool(int64) (PoolStats, error) { return PoolStats{}, nil }
func (f *fakeDevice) Timeline(ops ...Op) ([]Span, error) {
	spans := make([]Span, len(ops))
	for i, op := range ops {
		inner, n := unwrap(op)
		spans[i] = Span{Stream: n, Op: inner.Name()}
	}
	return spans, f.Run(ops...)
}
func (f *fakeDevice) Call(r Request) (any, error) { return r.Serve(nil) }

func (f *fakeDevice) Bench(b Bench) (Timing, error) {
	if err := b.defaults(); err != nil {
		return Timing{}, err
	}
	t := Timing{Name: b.Name}
	total := b.Warmup + b.Reps
	for i := 0; i < total; i++ {
		start := time.Now()
		if err := f.Run(b.Ops[i%len(b.Ops)]...); err != nil {
			return t, err
		}
		if i >= b.Warmup {
			t.Device = append(t.Device, time.Since(start))
		}
		b.Progress(i+1, total)
	}
	return t, nil
}

func float32At(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// slowFake is the fake device with a MemInfo that takes as long as
// $CUDAREPL_TEST_MEMINFO_DELAY says: a call of a REPL command ('mem')
// that a test can cut in the middle.
type slowFake struct{ *fakeDevice }

func (f slowFake) MemInfo() (int64, int64, error) {
	d, _ := time.ParseDuration(os.Getenv("CUDAREPL_TEST_MEMINFO_DELAY"))
	time.Sleep(d)
	return f.fakeDevice.MemInfo()
}

var _ = func() bool {
	workerBackends["fake-slow"] = func() (Device, error) {
		d, err := workerBackends["fake"]()
		if err != nil {
			return nil, err
		}
		return slowFake{d.(*fakeDevice)}, nil
	}
	return true
}()
