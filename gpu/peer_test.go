package gpu

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"cudarepl/nvrtc"
)

// fakeGPUs is one GPU of a fake worker process of two: each a fakeDevice
// of its own, named by its ordinal, whose kernels run only once loaded on
// it, as a module loaded in one GPU's context is unknown to another's.
type fakeGPUs struct {
	*fakeDevice
	ordinal int
	all     []*fakeGPUs
	loaded  map[string]bool
}

// Registered before any init() runs, so a re-executed test binary finds it.
var _ = func() bool {
	workerBackends["fake-gpus"] = func() (Device, error) {
		all := make([]*fakeGPUs, 2)
		for i := range all {
			all[i] = &fakeGPUs{ordinal: i, all: all, loaded: map[string]bool{},
				fakeDevice: &fakeDevice{mem: map[DevicePtr][]byte{}, host: map[HostPtr][]byte{}, next: 0x10000 + uint64(i)<<32}}
		}
		return all[0], nil
	}
	return true
}()

func (f *fakeGPUs) Info() DeviceInfo {
	return DeviceInfo{Name: fmt.Sprintf("fake GPU %d", f.ordinal), Major: 9, SMs: 1, Devices: len(f.all)}
}

func (f *fakeGPUs) openPeer(i int) (Device, error) {
	if i < 0 || i >= len(f.all) {
		return nil, noSuchGPU(i, len(f.all))
	}
	return f.all[i], nil
}

func (f *fakeGPUs) LoadKernel(img *nvrtc.Image, name string) (Kernel, error) {
	f.loaded[name] = true
	return f.fakeDevice.LoadKernel(img, name)
}

func (f *fakeGPUs) Launch(l Launch) error { return f.Run(l) }

func (f *fakeGPUs) Run(ops ...Op) error {
	for _, op := range ops {
		if l, ok := op.(Launch); ok && !f.loaded[l.Kernel.Name] {
			return fmt.Errorf("fake GPU %d: kernel %s is not loaded here", f.ordinal, l.Kernel.Name)
		}
	}
	return f.fakeDevice.Run(ops...)
}

func openFakeGPUs(t *testing.T) *Worker {
	t.Helper()
	w, err := Open(Options{Timeout: 5 * time.Second, backend: "fake-gpus", Stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatalf("Open(fake-gpus) = %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// on is On(w, i) as a *Worker, failing t where it fails.
func on(t *testing.T, w *Worker, i int) *Worker {
	t.Helper()
	d, err := On(w, i)
	if err != nil {
		t.Fatalf("On(w, %d) = %v", i, err)
	}
	v, ok := d.(*Worker)
	if !ok {
		t.Fatalf("On(w, %d) = a %T, want a *Worker", i, d)
	}
	return v
}

func TestOnWorker(t *testing.T) {
	w := openFakeGPUs(t)
	if d, err := On(w, 0); d != Device(w) || err != nil {
		t.Errorf("On(w, 0) = %v, %v; want w itself", d, err)
	}
	g1 := on(t, w, 1)
	if got, want := g1.Info().Name, "fake GPU 1"; got != want {
		t.Errorf("On(w, 1).Info().Name = %q, want %q", got, want)
	}
	if got := w.Info().Name; got != "fake GPU 0" {
		t.Errorf("w.Info().Name = %q after On, want %q", got, "fake GPU 0")
	}
	if d, err := On(g1, 0); err != nil || d.Info().Name != "fake GPU 0" {
		t.Errorf("On(On(w, 1), 0) = %v, %v; want GPU 0", d, err)
	}

	// Memory made through the view is GPU 1's: GPU 0 does not have it.
	p, err := g1.Alloc(5)
	if err != nil {
		t.Fatal(err)
	}
	if err := g1.Write(p, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 5)
	if err := g1.Read(out, p); err != nil || string(out) != "hello" {
		t.Errorf("On(w, 1).Read = %q, %v; want %q", out, err, "hello")
	}
	if err := w.Read(out, p); err == nil {
		t.Errorf("GPU 0 read GPU 1's allocation %#x; want an error", uint64(p))
	}
	if err := g1.Free(p); err != nil {
		t.Errorf("On(w, 1).Free = %v", err)
	}

	// A kernel is loaded on each GPU it runs on: the Worker loads it on
	// GPU 1 before its first launch there (fake GPU 1 refuses it
	// otherwise), and on GPU 0 for one loaded through the view.
	fillAndCheck(t, g1, fakeKernel(t, w, "fill"), 2.5)
	w2 := openFakeGPUs(t)
	fillAndCheck(t, w2, fakeKernel(t, on(t, w2, 1), "fill"), 1.5)

	// Closing the view closes nothing.
	if err := g1.Close(); err != nil {
		t.Errorf("On(w, 1).Close = %v", err)
	}
	if _, err := w.Alloc(8); err != nil {
		t.Errorf("Alloc on GPU 0 after closing the view of GPU 1 = %v", err)
	}
	if _, err := g1.Alloc(8); err != nil {
		t.Errorf("Alloc on GPU 1 after closing its view = %v", err)
	}
}

func TestOnErrors(t *testing.T) {
	w := openFakeGPUs(t)
	for _, tc := range []struct {
		dev  Device
		i    int
		want string
	}{
		{w, 2, "gpu: no GPU 2: the driver shows 2 GPUs here, 0 and 1"},
		{w, -1, "gpu: no GPU -1: the driver shows 2 GPUs here, 0 and 1"},
		{&fakeDevice{}, 1, "gpu: no GPU 1: a *gpu.fakeDevice drives one GPU only"},
	} {
		d, err := On(tc.dev, tc.i)
		if err == nil || err.Error() != tc.want || d != nil {
			t.Errorf("On(%T, %d) = %v, %v; want nil, %q", tc.dev, tc.i, d, err, tc.want)
		}
	}
	f := &fakeDevice{}
	if d, err := On(f, 0); d != Device(f) || err != nil {
		t.Errorf("On(fakeDevice, 0) = %v, %v; want the device itself", d, err)
	}
}

func TestNoSuchGPU(t *testing.T) {
	for _, tc := range []struct {
		i, n int
		want string
	}{
		{1, 0, "gpu: no GPU 1: the driver shows no GPU here"},
		{1, 1, "gpu: no GPU 1: the driver shows 1 GPU here, GPU 0"},
		{3, 2, "gpu: no GPU 3: the driver shows 2 GPUs here, 0 and 1"},
		{8, 8, "gpu: no GPU 8: the driver shows 8 GPUs here, 0 to 7"},
	} {
		if got := noSuchGPU(tc.i, tc.n).Error(); got != tc.want {
			t.Errorf("noSuchGPU(%d, %d) = %q, want %q", tc.i, tc.n, got, tc.want)
		}
	}
}

// A fault on another GPU ends the worker as one on GPU 0 does, and the
// view works again in the fresh worker.
func TestOnWorkerFault(t *testing.T) {
	w := openFakeGPUs(t)
	g1 := on(t, w, 1)
	err := g1.Launch(Launch{Kernel: fakeKernel(t, g1, "fault"), Grid: Dim(1), Block: Dim(1)})
	var we *WorkerError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "launch fault (grid 1x1x1, block 1x1x1) on GPU 1 faulted") {
		t.Fatalf("Launch(fault) on GPU 1 = %v, want a WorkerError naming GPU 1", err)
	}
	if w.Restarts() != 1 || g1.Restarts() != 1 {
		t.Errorf("Restarts() = %d, %d on the view; want 1, shared", w.Restarts(), g1.Restarts())
	}
	fillAndCheck(t, g1, fakeKernel(t, w, "fill"), 4)
}

func TestMultiCheck(t *testing.T) {
	op := Memset{Dst: 0x1000, Count: 1}
	one := []DevOp{{0, op}}
	for _, tc := range []struct {
		desc string
		m    Multi
		want string
	}{
		{"no GPUs", Multi{Steps: one, Reps: 1}, "gpu: multi: 0 GPUs; Devices must be at least 1"},
		{"no steps", Multi{Devices: 2, Reps: 1}, "gpu: multi: no steps"},
		{"no repetitions", Multi{Devices: 2, Steps: one}, "gpu: multi: 0 timed repetitions; Reps must be at least 1"},
		{"negative warm-up", Multi{Devices: 2, Steps: one, Reps: 1, Warmup: -1},
			"gpu: multi: -1 warm-up repetitions; Warmup must not be negative"},
		{"nil op", Multi{Devices: 2, Steps: []DevOp{{0, op}, {1, nil}}, Reps: 1}, "gpu: multi: step 1 on GPU 1: nil op"},
		{"GPU past Devices", Multi{Name: "ring", Devices: 2, Steps: []DevOp{{0, op}, {2, op}}, Reps: 1},
			`gpu: multi "ring": step 1 (memset) is on GPU 2, but Devices is 2: give 0 to 1, or -1 for an op that spans every GPU`},
		{"GPU below -1", Multi{Devices: 1, Steps: []DevOp{{-2, op}}, Reps: 1},
			"gpu: multi: step 0 (memset) is on GPU -2, but Devices is 1: give 0 to 0, or -1 for an op that spans every GPU"},
	} {
		_, err := RunMulti(nil, tc.m) // checked before the device is used
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: RunMulti = %v, want %q", tc.desc, err, tc.want)
		}
	}
	ok := Multi{Devices: 2, Steps: []DevOp{{0, op}, {1, op}, {-1, op}}, Reps: 1}
	if err := ok.check(); err != nil {
		t.Errorf("check(%+v) = %v, want nil", ok, err)
	}
}

// A Multi on more GPUs than the worker has fails before it is sent.
func TestRunMultiTooManyGPUs(t *testing.T) {
	w := openFakeGPUs(t)
	m := Multi{Devices: 3, Steps: []DevOp{{2, Memset{Dst: 0x1000, Count: 1}}}, Reps: 1}
	want := "gpu: multi on 3 GPUs: no GPU 2: the driver shows 2 GPUs here, 0 and 1"
	for _, dev := range []Device{w, on(t, w, 1)} {
		if _, err := RunMulti(dev, m); err == nil || err.Error() != want {
			t.Errorf("RunMulti(%s) = %v, want %q", dev.Info().Name, err, want)
		}
	}
}

// The calls, ops and answers of several GPUs cross the pipe as they are.
func TestPeerTypesCrossThePipe(t *testing.T) {
	copyOp := PeerCopy{Dst: 0x2000, DstDevice: 1, Src: 0x1000, SrcDevice: 0, Bytes: 64}
	for _, c := range []call{
		onDevice{1, allocCall{64}},
		onDevice{1, runCall{[]Op{copyOp, WaitPeer{Device: 0, Event: 3}}}},
		onDevice{1, deviceInfoCall{}},
		multiCall{Multi{Name: "ring", Devices: 2, Warmup: 1, Reps: 2, Timeline: true, Steps: []DevOp{
			{0, Record{Event: 1}}, {1, WaitPeer{Device: 0, Event: 1}}, {1, copyOp}, {-1, OnStream{Stream: 1, Op: copyOp}}}}},
	} {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(&c); err != nil {
			t.Errorf("encode %T: %v", c, err)
			continue
		}
		var got call
		if err := gob.NewDecoder(&buf).Decode(&got); err != nil {
			t.Errorf("decode %T: %v", c, err)
			continue
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%T crossed as %#v, want %#v", c, got, c)
		}
	}
	for _, v := range []any{
		MultiResult{Times: []time.Duration{3, 4}, PerGPU: [][]time.Duration{{3, 2}, {1, 4}},
			Spans: [][]Span{{{Stream: 0, Op: "vadd", Start: 1, End: 2}}, {{Stream: 1, Op: "memset", Start: 0, End: 1}}}},
		DeviceInfo{Name: "fake GPU 1", Devices: 2},
	} {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(reply{Value: v}); err != nil {
			t.Errorf("encode a reply of %T: %v", v, err)
			continue
		}
		var got reply
		if err := gob.NewDecoder(&buf).Decode(&got); err != nil || !reflect.DeepEqual(got.Value, v) {
			t.Errorf("a reply of %T crossed as %#v, %v; want %#v", v, got.Value, err, v)
		}
	}
}

// envRequest reads variable Name in the worker: as its process started
// (where /proc says), and now.
type envRequest struct{ Name string }

type envAnswer struct{ AtStart, Now string }

func (r envRequest) Serve(*Exec) (any, error) {
	a := envAnswer{AtStart: "(unknown)", Now: os.Getenv(r.Name)}
	if b, err := os.ReadFile("/proc/self/environ"); err == nil {
		a.AtStart = "(unset)"
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, r.Name+"="); ok {
				a.AtStart = v
			}
		}
	}
	return a, nil
}

func init() {
	registerType(envRequest{})
	registerType(envAnswer{})
}

// NVLink multicast stays off in the worker, whatever the parent's
// environment says: in the environment it starts with, and as it runs.
func TestWorkerKeepsNVLSOff(t *testing.T) {
	t.Setenv(nvlsEnv, "1")
	keepNVLSOff() // what the worker does as it starts
	if got := os.Getenv(nvlsEnv); got != "0" {
		t.Errorf("after keepNVLSOff, %s = %q, want \"0\"", nvlsEnv, got)
	}
	os.Setenv(nvlsEnv, "1")
	w := openFake(t, 5*time.Second)
	a, err := answer[envAnswer](w.Call(envRequest{nvlsEnv}))
	if err != nil {
		t.Fatal(err)
	}
	if a.Now != "0" || a.AtStart != "0" && a.AtStart != "(unknown)" {
		t.Errorf("in the worker %s = %q at its start, %q now; want \"0\" both", nvlsEnv, a.AtStart, a.Now)
	}
}
