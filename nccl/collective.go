package nccl

import (
	"fmt"

	"cudarepl/gpu"
)

// Kind is which collective a Collective runs.
type Kind int

// The collectives. The zero Kind is none of them, so that a Collective
// whose Kind was forgotten is refused rather than run as an all-reduce.
const (
	AllReduce     Kind = iota + 1 // every GPU gets the sum of every GPU's buffer (ncclAllReduce)
	AllGather                     // every GPU gets every GPU's buffer, rank after rank (ncclAllGather)
	ReduceScatter                 // GPU r gets block r of the sum (ncclReduceScatter)
)

func (k Kind) String() string {
	switch k {
	case AllReduce:
		return "all-reduce"
	case AllGather:
		return "all-gather"
	case ReduceScatter:
		return "reduce-scatter"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// elemBytes is the size of the one element type collectives move, float32.
const elemBytes = 4

// Collective is one NCCL collective of float32 values (reductions sum)
// over GPUs 0..Devices-1, rank r on GPU r. It is a gpu.Op that spans every
// GPU itself: it runs as a step gpu.DevOp{Device: -1, Op: c} of a
// gpu.Multi (gpu.RunMulti), prepared and enqueued from GPU 0 with every
// GPU's context held. Enqueueing it is one ncclGroupStart … ncclGroupEnd
// holding the call of each rank, on stream Stream of that rank's GPU.
type Collective struct {
	Kind    Kind
	Devices int
	// Send and Recv hold one buffer per GPU, on that GPU: Send[r] and
	// Recv[r] are rank r's (the same address for an in-place
	// all-reduce).
	Send, Recv []gpu.DevicePtr
	// Count is NCCL's count argument, in elements:
	//   - AllReduce: each GPU's Send and Recv hold Count;
	//   - AllGather: its sendcount, each Send holds Count, each Recv
	//     Devices×Count (rank r's at offset r×Count);
	//   - ReduceScatter: its recvcount, each Send holds Devices×Count,
	//     each Recv Count (block r of the sum on rank r).
	Count int64
	// Stream is the stream of each GPU the calls go on: 0 its own, others
	// as gpu.OnStream numbers them.
	Stream int
}

// Name says the kind, the count and how many GPUs, e.g. "all-reduce of
// 1048576 float32 on 2 GPUs".
func (c Collective) Name() string {
	return fmt.Sprintf("%s of %d float32 on %d GPUs", c.Kind, c.Count, c.Devices)
}

// SendCount is how many elements each GPU's Send buffer holds.
func (c Collective) SendCount() int64 {
	if c.Kind == ReduceScatter {
		return int64(c.Devices) * c.Count
	}
	return c.Count
}

// RecvCount is how many elements each GPU's Recv buffer holds.
func (c Collective) RecvCount() int64 {
	if c.Kind == AllGather {
		return int64(c.Devices) * c.Count
	}
	return c.Count
}

// validate refuses what NCCL would refuse with a bare ncclInvalidArgument,
// and what the bindings do not do, in one line.
func (c Collective) validate() error {
	switch {
	case c.Kind != AllReduce && c.Kind != AllGather && c.Kind != ReduceScatter:
		return fmt.Errorf("nccl: %s: unknown kind, want AllReduce, AllGather or ReduceScatter", c.Name())
	case c.Devices < 1:
		return fmt.Errorf("nccl: %s: Devices must be at least 1", c.Name())
	case c.Count <= 0:
		return fmt.Errorf("nccl: %s: Count must be positive", c.Name())
	case len(c.Send) != c.Devices:
		return fmt.Errorf("nccl: %s: Send has %d buffers, want %d (one per GPU)", c.Name(), len(c.Send), c.Devices)
	case len(c.Recv) != c.Devices:
		return fmt.Errorf("nccl: %s: Recv has %d buffers, want %d (one per GPU)", c.Name(), len(c.Recv), c.Devices)
	case c.Stream < 0:
		return fmt.Errorf("nccl: %s: Stream %d is negative", c.Name(), c.Stream)
	}
	for r := range c.Devices {
		if c.Send[r] == 0 || c.Recv[r] == 0 {
			return fmt.Errorf("nccl: %s: GPU %d's Send or Recv is 0, not device memory", c.Name(), r)
		}
	}
	return nil
}

// Prepare checks the collective, finds each GPU's stream and the root's
// communicators (making them on first use), and builds the group of
// calls. x must be GPU 0's, as a gpu.DevOp of Device -1 has it.
func (c Collective) Prepare(x *gpu.Exec) (gpu.Step, error) {
	if err := c.validate(); err != nil {
		return gpu.Step{}, err
	}
	if o := x.Ordinal(); o != 0 {
		return gpu.Step{}, fmt.Errorf("nccl: %s: prepared on GPU %d; a collective spans every GPU itself, so it runs as a gpu.DevOp of Device -1 (prepared on GPU 0)", c.Name(), o)
	}
	// Info().Devices is 0 where the GPU count is not known; then
	// DeviceStream below says what is missing.
	if have := x.Info().Devices; have > 0 && c.Devices > have {
		return gpu.Step{}, fmt.Errorf("nccl: %s: needs %d GPUs, this machine shows %d", c.Name(), c.Devices, have)
	}
	streams := make([]uintptr, c.Devices)
	for r := range streams {
		s, err := x.DeviceStream(r, c.Stream)
		if err != nil {
			return gpu.Step{}, fmt.Errorf("nccl: %s: stream %d of GPU %d: %w", c.Name(), c.Stream, r, err)
		}
		streams[r] = s
	}
	cs, err := communicators(x, c.Devices)
	if err != nil {
		return gpu.Step{}, err
	}
	comms, api := cs.h, cs.api
	enqueue := func() error {
		if err := api.check(api.ncclGroupStart(), "ncclGroupStart", c.Name()); err != nil {
			return err
		}
		var first error
		for r := range c.Devices {
			if first = c.call(api, r, comms[r], streams[r]); first != nil {
				break // ncclGroupEnd still runs, and drops the group
			}
		}
		if err := api.check(api.ncclGroupEnd(), "ncclGroupEnd", c.Name()); first == nil {
			first = err
		}
		// NCCL set each GPU current as it launched.
		if err := x.MakeCurrent(); first == nil {
			first = err
		}
		return first
	}
	uses := append(append([]gpu.DevicePtr{}, c.Send...), c.Recv...)
	return gpu.Step{Enqueue: enqueue, Uses: uses,
		NoCapture: c.Name() + " enqueues on every GPU's stream, which one graph capture cannot hold"}, nil
}

// call makes rank r's NCCL call, with communicator comm on stream.
func (c Collective) call(api *ncclAPI, r int, comm, stream uintptr) error {
	send, recv, n := uint64(c.Send[r]), uint64(c.Recv[r]), uint64(c.Count)
	detail := fmt.Sprintf("rank %d (GPU %d): send %#x, recv %#x, count %d, float32", r, r, send, recv, n)
	switch c.Kind {
	case AllReduce:
		return api.check(api.ncclAllReduce(send, recv, n, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce", detail+", sum")
	case AllGather:
		return api.check(api.ncclAllGather(send, recv, n, ncclFloat32, comm, stream), "ncclAllGather", detail)
	case ReduceScatter:
		return api.check(api.ncclReduceScatter(send, recv, n, ncclFloat32, ncclSum, comm, stream), "ncclReduceScatter", detail+", sum")
	}
	return fmt.Errorf("nccl: %s: unknown kind", c.Name())
}

// BusFactor is what nccl-tests multiplies a collective's algorithm
// bandwidth by to get its bus bandwidth on n GPUs (its doc/PERFORMANCE.md):
// 2(n−1)/n for an all-reduce, whose every element crosses links twice
// (reduce, then broadcast); (n−1)/n for an all-gather and a
// reduce-scatter, which do one half each. The bus bandwidth is then
// comparable with a link's peak whatever n is; 0 for an unknown kind or
// n < 1.
func BusFactor(k Kind, n int) float64 {
	if n < 1 {
		return 0
	}
	switch k {
	case AllReduce:
		return 2 * float64(n-1) / float64(n)
	case AllGather, ReduceScatter:
		return float64(n-1) / float64(n)
	}
	return 0
}

// AlgBytes is the size nccl-tests divides by the time to get the
// algorithm bandwidth of a collective of kind k on n GPUs with NCCL's
// count (as Collective.Count): the larger of one GPU's send and receive
// buffers, in bytes of float32. So algbw = AlgBytes/t and busbw = algbw ×
// BusFactor(k, n). 0 for an unknown kind.
func AlgBytes(k Kind, n int, count int64) int64 {
	switch k {
	case AllReduce, AllGather, ReduceScatter:
		c := Collective{Kind: k, Devices: n, Count: count}
		return elemBytes * max(c.SendCount(), c.RecvCount())
	}
	return 0
}

func init() {
	gpu.RegisterLibrary(gpu.Library{Name: "NCCL", Version: Version, Types: []any{Collective{}}})
}
