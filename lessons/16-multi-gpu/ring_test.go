package multigpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"cudarepl/gpu"
	"cudarepl/numeric"
)

// fakeMemory is device memory on the CPU: regions by their base address.
type fakeMemory struct {
	regions map[gpu.DevicePtr][]float32
	next    gpu.DevicePtr
}

func (m *fakeMemory) alloc(n int) gpu.DevicePtr {
	m.next += 1 << 30
	m.regions[m.next] = make([]float32, n)
	return m.next
}

// at is the floats from address p to the end of its region.
func (m *fakeMemory) at(p gpu.DevicePtr) []float32 {
	for base, r := range m.regions {
		if p >= base && p < base+gpu.DevicePtr(4*len(r)) {
			return r[(p-base)/4:]
		}
	}
	panic(fmt.Sprintf("address %#x is in no region", p))
}

// simulate runs steps on the CPU in a random order that keeps each GPU's
// steps in order and honours every WaitPeer: it waits for the Record of
// that event enqueued last before it, as cuStreamWaitEvent does. Each
// step runs whole, so a missing wait shows as a wrong result in some
// orders.
func simulate(t *testing.T, m *fakeMemory, steps []gpu.DevOp, n int, rng *rand.Rand) {
	t.Helper()
	type rec struct{ dev, event int }
	queues := make([][]int, n) // step indices per GPU
	waitsFor := map[int]int{}  // step index of a WaitPeer → step index of its Record, or -1
	last := map[rec]int{}
	for i, s := range steps {
		switch op := s.Op.(type) {
		case gpu.Record:
			last[rec{s.Device, op.Event}] = i
		case gpu.WaitPeer:
			if j, ok := last[rec{op.Device, op.Event}]; ok {
				waitsFor[i] = j
			} else {
				waitsFor[i] = -1
			}
		}
		queues[s.Device] = append(queues[s.Device], i)
	}
	done := map[int]bool{}
	for {
		var ready []int
		for g := range n {
			if len(queues[g]) == 0 {
				continue
			}
			i := queues[g][0]
			if j, ok := waitsFor[i]; ok && j >= 0 && !done[j] {
				continue
			}
			ready = append(ready, g)
		}
		if len(ready) == 0 {
			for g := range n {
				if len(queues[g]) > 0 {
					t.Fatalf("deadlock: GPU %d waits at step %d", g, queues[g][0])
				}
			}
			return
		}
		g := ready[rng.IntN(len(ready))]
		i := queues[g][0]
		queues[g] = queues[g][1:]
		switch op := steps[i].Op.(type) {
		case gpu.PeerCopy:
			copy(m.at(op.Dst)[:op.Bytes/4], m.at(op.Src)[:op.Bytes/4])
		case gpu.Launch:
			acc, in := m.at(gpu.DevicePtr(op.Args[0].Bits)), m.at(gpu.DevicePtr(op.Args[1].Bits))
			for k := range int(op.Args[2].Bits) {
				acc[k] += in[k]
			}
		case gpu.Record, gpu.WaitPeer:
		default:
			t.Fatalf("step %d: %T is not simulated", i, op)
		}
		done[i] = true
	}
}

// TestRingOps: both hand-written rings leave every GPU's buffer the sum of
// every GPU's, on 2 to 5 GPUs, in many orders the GPUs may run their
// steps in, and twice in a row (the second run waits for the first).
func TestRingOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 2; n <= 5; n++ {
		for _, v := range []string{ringCopy, ringPeer} {
			for trial := range 20 {
				m := &fakeMemory{regions: map[gpu.DevicePtr][]float32{}}
				chunk := 1 + rng.IntN(5)
				r := &ring{n: n, count: int64(n * chunk), blocks: 1}
				want := make([]float64, n*chunk)
				for g := range n {
					r.data = append(r.data, m.alloc(n*chunk))
					r.scratch = append(r.scratch, m.alloc(chunk))
					for k, x := range m.regions[r.data[g]] {
						_ = x
						v := float32(rng.IntN(1000))
						m.regions[r.data[g]][k] = v
						want[k] += float64(v)
					}
				}
				steps := append(r.ops(v), r.ops(v)...)
				simulate(t, m, steps, n, rng)
				// Twice: each GPU holds n times the sum.
				for g := range n {
					got := m.regions[r.data[g]]
					for k := range got {
						if math.Abs(float64(got[k])-float64(n)*want[k]) > 0 {
							t.Fatalf("%s, %d GPUs, chunk %d, trial %d: GPU %d's element %d = %g, want %g",
								v, n, chunk, trial, g, k, got[k], float64(n)*want[k])
						}
					}
				}
			}
		}
	}
}

// TestRingReference: what the one-GPU ring's ranks own, by a plain sum.
func TestRingReference(t *testing.T) {
	// Two ranks of two chunks of one float: rank 0 owns chunk 1, rank 1 chunk 0.
	in := []float32{1, 2, 10, 20}
	got := ringReference(in, 2, 1)
	if want := []float64{22, 11}; got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ringReference = %v, want %v", got, want)
	}
}

// TestRingStepOnTheCPU runs ring_step's arithmetic in Go for 2 to 8 ranks
// and checks it against ringReference: the kernel's index formula is
// what the lesson says it is.
func TestRingStepOnTheCPU(t *testing.T) {
	for ranks := 2; ranks <= 8; ranks++ {
		chunk := 3
		size := ranks * chunk
		bufs := make([]float32, ranks*size)
		for i := range bufs {
			bufs[i] = float32(i%7) - 3
		}
		want := ringReference(bufs, ranks, chunk)
		for step := range ranks - 1 {
			next := append([]float32(nil), bufs...)
			for r := range ranks {
				from, c := mod(r-1, ranks), mod(r-step-1, ranks)
				for i := range chunk {
					next[r*size+c*chunk+i] += bufs[from*size+c*chunk+i]
				}
			}
			bufs = next
		}
		owned := make([]float32, ranks*chunk)
		for r := range ranks {
			copy(owned[r*chunk:], bufs[r*size+((r+1)%ranks)*chunk:][:chunk])
		}
		if _, err := numeric.Compare("owned", owned, want, []int{ranks, chunk}, 1e-6); err != nil {
			t.Errorf("%d ranks: %v", ranks, err)
		}
	}
}

// TestBeforeStart: a guard left as poisoned passes; a write into it is
// reported with its negative index.
func TestBeforeStart(t *testing.T) {
	guard := make([]float32, 4)
	for i := range guard {
		guard[i] = math.Float32frombits(numeric.Poison32)
	}
	if err := beforeStart("bufs", guard); err != nil {
		t.Fatalf("untouched guard: %v", err)
	}
	guard[3] = 1
	err := beforeStart("bufs", guard)
	if err == nil || err.Error() != "check: bufs[-1] = 1 was written before its start: is an index negative?" {
		t.Errorf("written guard: %v", err)
	}
}

// TestSizes: the sizes the steps sweep, and their labels.
func TestSizes(t *testing.T) {
	got := sizesBy4(4<<10, 1<<30)
	if len(got) != 10 || got[0] != 4<<10 || got[9] != 1<<30 {
		t.Errorf("sizesBy4(4 KiB, 1 GiB) = %v", got)
	}
	for _, tt := range []struct {
		b    int64
		want string
	}{{4096, "4 KiB"}, {1 << 20, "1 MiB"}, {256 << 20, "256 MiB"}, {1 << 30, "1 GiB"}, {1000, "1000 B"}} {
		if got := bytesLabel(tt.b); got != tt.want {
			t.Errorf("bytesLabel(%d) = %q, want %q", tt.b, got, tt.want)
		}
	}
}
