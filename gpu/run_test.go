package gpu

import (
	"slices"
	"strings"
	"testing"
)

// TestCaptureRules: each op says whether a graph can hold it, and which
// device memory it uses, so that a graph that holds it is refused once
// that memory is freed. No GPU: nothing here reaches the driver.
func TestCaptureRules(t *testing.T) {
	const base = DevicePtr(0x1000)
	c := &Context{d: &driverAPI{}, kernels: map[kernelKey]uintptr{{"img", "k"}: 1}, maxDyn: map[uintptr]int{},
		allocs: map[DevicePtr]int64{base: 256}, graphs: map[uint64]*graphRec{}}
	k := Kernel{Name: "k", Image: "img"}
	launch := func(args ...Arg) Launch { return Launch{Kernel: k, Grid: Dim(1), Block: Dim(1), Args: args} }
	tests := []struct {
		op        Op
		noCapture string    // part of why it cannot be captured; "" when it can
		watched   DevicePtr // the allocation a graph holding it watches; 0 for none
	}{
		{Sync{}, "synchronize cannot be captured", 0},
		{AllocSlot{Slot: 1, Bytes: 4}, "allocate 4 bytes into slot 1 cannot be captured", 0},
		{FreeSlot{Slot: 1}, "free slot 1 cannot be captured", 0},
		{Record{1}, "record event 1 cannot be captured", 0},
		{WaitFor{1}, "wait for event 1 cannot be captured", 0},
		{OnStream{1, Memset{Dst: base}}, "memset on stream 1 cannot be captured", base},
		{Memset{Dst: base + 0x10}, "", base},
		{Copy{Kind: DeviceToDevice, Dst: uint64(base), Src: uint64(base + 0x80), Bytes: 4}, "", base},
		{Copy{Kind: HostToDevice, Dst: 0x9000, Src: 0x10, Bytes: 4}, "", 0},
		{launch(SlotPtr(1)), "takes a slot's pointer, which a graph cannot follow", 0},
		{launch(Ptr(base+4), Int32(3)), "", base},
		{launch(Ptr(0x9000)), "", 0},
	}
	for _, tt := range tests {
		p, err := c.prepare([]Op{tt.op})
		if err != nil {
			t.Errorf("%s: prepare = %v", tt.op.Name(), err)
			continue
		}
		if got := p[0].NoCapture; tt.noCapture == "" && got != "" || !strings.Contains(got, tt.noCapture) {
			t.Errorf("%s: NoCapture = %q, want %q", tt.op.Name(), got, tt.noCapture)
		}
		var want []DevicePtr
		if tt.watched != 0 {
			want = []DevicePtr{tt.watched}
		}
		if got := c.allocationsUsed(p); !slices.Equal(got, want) {
			t.Errorf("%s: a graph holding it watches %v, want %v", tt.op.Name(), got, want)
		}
		p.release()
	}
}

// noWork is an op that prepares nothing to enqueue.
type noWork struct{}

func (noWork) Name() string                { return "no work" }
func (noWork) Prepare(*Exec) (Step, error) { return Step{}, nil }

// TestPrepareRefusesNoWork: an op whose Step has no Enqueue is refused
// when prepared, not run into a nil function on the GPU thread.
func TestPrepareRefusesNoWork(t *testing.T) {
	c := &Context{d: &driverAPI{}}
	if _, err := c.prepare([]Op{Sync{}, noWork{}}); err == nil || !strings.Contains(err.Error(), "op 1: gpu: no work prepared no work") {
		t.Errorf("prepare(no work) = %v, want it refused by name", err)
	}
}

// uncomparable is an op holding a map, as a cuDNN graph's execution does:
// nothing may compare ops with ==.
type uncomparable struct{ M map[int]int }

func (uncomparable) Name() string { return "uncomparable" }
func (uncomparable) Prepare(*Exec) (Step, error) {
	return Step{Enqueue: func() error { return nil }}, nil
}

func TestKernelsOf(t *testing.T) {
	k := Kernel{Name: "k", Image: "img"}
	tests := []struct {
		op   Op
		want []Kernel
	}{
		{Launch{Kernel: k}, []Kernel{k}},
		{OnStream{2, Launch{Kernel: k}}, []Kernel{k}},
		{Memset{}, nil},
		{uncomparable{M: map[int]int{}}, nil},
		{OnStream{1, uncomparable{M: map[int]int{}}}, nil},
	}
	for _, tt := range tests {
		if got := kernelsOf(tt.op); !slices.Equal(got, tt.want) {
			t.Errorf("kernelsOf(%s) = %v, want %v", tt.op.Name(), got, tt.want)
		}
	}
}
