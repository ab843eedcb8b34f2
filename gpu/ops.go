package gpu

import (
	"encoding/gob"
	"fmt"
	"strings"
	"time"
)

// Op is one piece of device work that Run, Capture and Bench enqueue:
// a Launch, a GEMM, a Copy, a Memset, a GraphOp, or the host-side steps
// Sync, AllocSlot and FreeSlot.
type Op interface {
	opName() string
}

// Copy moves Bytes between host memory from AllocHost and device memory, or
// within device memory (cuMemcpy*Async_v2).
type Copy struct {
	Kind     CopyKind
	Dst, Src uint64 // a DevicePtr or a HostPtr, as Kind says
	Bytes    int64
}

// CopyKind is the direction of a Copy.
type CopyKind int

// The copy directions.
const (
	HostToDevice CopyKind = iota + 1
	DeviceToHost
	DeviceToDevice
)

// Memset fills Count 32-bit words at Dst with Value (cuMemsetD32Async).
type Memset struct {
	Dst   DevicePtr
	Value uint32
	Count int64
}

// GraphOp replays a captured graph (cuGraphLaunch).
type GraphOp struct{ Graph Graph }

// OnStream enqueues Op on stream Stream: 0 is the device's own stream,
// where Run, Capture and Bench enqueue and time; 1, 2, … are further
// streams, made on first use, that run concurrently with it and with each
// other. Order work across streams with Record and WaitFor; Run waits for
// the device's own stream only, so work on another stream that it does
// not wait for may still be running when Run returns.
type OnStream struct {
	Stream int
	Op     Op
}

// Record records event Event, made on first use, on the stream it is
// enqueued on (cuEventRecord): it completes when everything enqueued on
// that stream before it has.
type Record struct{ Event int }

// WaitFor makes the stream it is enqueued on wait until event Event has
// completed (cuStreamWaitEvent), without blocking the host.
type WaitFor struct{ Event int }

// Span is one op of a Timeline: when it ran on its stream, from the start
// of the timeline.
type Span struct {
	Stream     int
	Op         string
	Start, End time.Duration
}

// unwrap is the op an OnStream wraps, and its stream; any other op, on
// stream 0.
func unwrap(op Op) (Op, int) {
	if s, ok := op.(OnStream); ok {
		return s.Op, s.Stream
	}
	return op, 0
}

// Sync waits on the host until everything enqueued before it has finished
// (cuStreamSynchronize): the round trip a program pays when it
// synchronises after each launch. It cannot be captured into a graph.
type Sync struct{}

// AllocSlot allocates Bytes of device memory into slot Slot, for launches
// that name it with SlotPtr: allocation inside a timed loop, as a training
// step that allocates its temporaries does. With Pool it takes the memory
// from the device's stream-ordered pool (cuMemAllocAsync, see MemPool),
// else from cuMemAlloc, which synchronises the device. Slots cannot be
// captured into a graph.
type AllocSlot struct {
	Slot  int
	Bytes int64
	Pool  bool
}

// FreeSlot frees the memory in slot Slot: cuMemFreeAsync with Pool, else
// cuMemFree.
type FreeSlot struct {
	Slot int
	Pool bool
}

// GEMM is C = Alpha·op(A)·op(B) + Beta·C through cuBLAS, with every matrix
// row-major (as in C and Go): A is M×K (K×M when TransA), B is K×N (N×K
// when TransB), C is M×N. With Batch > 1 it is a strided batched GEMM whose
// i-th problem starts Stride elements after the (i-1)-th.
type GEMM struct {
	M, N, K        int
	A, B, C        DevicePtr
	TransA, TransB bool
	Alpha, Beta    float32
	Type           DType   // of A and B: FP32, FP16 or BF16
	OutType        DType   // of C; Type when 0
	Compute        Compute // Compute32F when 0
	Batch          int
	StrideA        int64
	StrideB        int64
	StrideC        int64
	// Tuned runs the product through cuBLASLt with the fastest of the
	// algorithms its heuristics offer for this shape, each timed on first
	// use (once per shape and context), instead of cuBLAS's default pick.
	Tuned bool
}

func (l Launch) opName() string  { return l.Kernel.Name }
func (c Copy) opName() string    { return "copy " + c.Kind.String() }
func (m Memset) opName() string  { return "memset" }
func (g GraphOp) opName() string { return fmt.Sprintf("graph of %d ops", g.Graph.Ops) }
func (Sync) opName() string      { return "synchronize" }
func (s OnStream) opName() string {
	if s.Op == nil {
		return fmt.Sprintf("nothing on stream %d", s.Stream)
	}
	return fmt.Sprintf("%s on stream %d", s.Op.opName(), s.Stream)
}
func (r Record) opName() string  { return fmt.Sprintf("record event %d", r.Event) }
func (w WaitFor) opName() string { return fmt.Sprintf("wait for event %d", w.Event) }
func (a AllocSlot) opName() string {
	return fmt.Sprintf("allocate %d bytes into slot %d%s", a.Bytes, a.Slot, map[bool]string{true: " from the pool"}[a.Pool])
}
func (f FreeSlot) opName() string { return fmt.Sprintf("free slot %d", f.Slot) }
func (g GEMM) opName() string {
	return fmt.Sprintf("gemm %dx%dx%d %s", g.M, g.N, g.K, g.Type)
}

func (k CopyKind) String() string {
	switch k {
	case HostToDevice:
		return "host→device"
	case DeviceToHost:
		return "device→host"
	case DeviceToDevice:
		return "device→device"
	}
	return fmt.Sprintf("CopyKind(%d)", int(k))
}

// describeOps names a list of ops for an error message.
func describeOps(ops []Op) string {
	if len(ops) == 1 {
		return ops[0].opName()
	}
	names := []string{}
	seen := map[string]bool{}
	for _, op := range ops {
		if n := op.opName(); !seen[n] && len(names) < 3 {
			seen[n] = true
			names = append(names, n)
		}
	}
	return fmt.Sprintf("%d ops (%s)", len(ops), strings.Join(names, ", "))
}

func init() {
	// Ops cross the pipe to the worker inside interface values.
	gob.Register(Launch{})
	gob.Register(Copy{})
	gob.Register(Memset{})
	gob.Register(GraphOp{})
	gob.Register(Sync{})
	gob.Register(OnStream{})
	gob.Register(Record{})
	gob.Register(WaitFor{})
	gob.Register(AllocSlot{})
	gob.Register(FreeSlot{})
	gob.Register(GEMM{})
}
