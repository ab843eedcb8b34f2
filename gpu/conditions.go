package gpu

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"cudarepl/nvml"
)

// Conditions is what the GPU reported (through NVML) while a Bench ran:
// its clocks, power, temperature, and why its clocks were held below
// their maximum. A GPU under sustained load lowers its SM clock to stay
// within its power limit, which is why no kernel reaches a peak figured at
// the maximum clock: the conditions say so beside the time.
type Conditions struct {
	Samples     int      `json:"samples"`
	SMClockMHz  [2]int   `json:"sm_clock_mhz"`  // the lowest and the highest seen
	MemClockMHz int      `json:"mem_clock_mhz"` // the highest seen
	PowerW      float64  `json:"power_w"`       // the highest seen
	PowerLimitW float64  `json:"power_limit_w"`
	TempC       int      `json:"temp_c"`             // the highest seen
	Throttle    []string `json:"throttle,omitempty"` // every reason seen, but idle (which a sample between repetitions may catch)
}

// Merge is the conditions of c and d together: both ranges, the higher
// readings, every reason.
func (c Conditions) Merge(d Conditions) Conditions {
	switch {
	case c.Samples == 0:
		return d
	case d.Samples == 0:
		return c
	}
	c.Samples += d.Samples
	c.SMClockMHz = [2]int{min(c.SMClockMHz[0], d.SMClockMHz[0]), max(c.SMClockMHz[1], d.SMClockMHz[1])}
	c.MemClockMHz, c.PowerW, c.PowerLimitW = max(c.MemClockMHz, d.MemClockMHz), max(c.PowerW, d.PowerW), max(c.PowerLimitW, d.PowerLimitW)
	c.TempC = max(c.TempC, d.TempC)
	for _, r := range d.Throttle {
		if !slices.Contains(c.Throttle, r) {
			c.Throttle = append(c.Throttle, r)
		}
	}
	return c
}

// add takes one sample into c.
func (c *Conditions) add(s nvml.Sample) {
	reasons := (s.Throttle &^ 0x1).Names() // not "idle"
	*c = c.Merge(Conditions{Samples: 1, SMClockMHz: [2]int{s.SMClockMHz, s.SMClockMHz}, MemClockMHz: s.MemClockMHz,
		PowerW: s.PowerW, PowerLimitW: s.PowerLimitW, TempC: s.TempC, Throttle: reasons})
}

func (c Conditions) String() string {
	if c.Samples == 0 {
		return ""
	}
	var b strings.Builder
	if c.SMClockMHz[0] == c.SMClockMHz[1] {
		fmt.Fprintf(&b, "SM clock %d MHz", c.SMClockMHz[0])
	} else {
		fmt.Fprintf(&b, "SM clock %d–%d MHz", c.SMClockMHz[0], c.SMClockMHz[1])
	}
	fmt.Fprintf(&b, ", memory %d MHz, up to %.0f W of %.0f W, %d °C", c.MemClockMHz, c.PowerW, c.PowerLimitW, c.TempC)
	if len(c.Throttle) > 0 {
		fmt.Fprintf(&b, "; clocks held by: %s", strings.Join(c.Throttle, ", "))
	}
	return b.String()
}

// conditionsEvery is how often the GPU is sampled while a Bench runs:
// often enough to see the clock fall under load, rarely enough that the
// sampling thread does not disturb the host's timing of enqueues.
const conditionsEvery = 50 * time.Millisecond

// sampleConditions starts sampling the GPU while b runs, from another
// thread, keeping a Trace as well where b asks for one; the sampler's
// finish stops it and gives what it saw. Where NVML cannot be read there
// are no samples (the reason is kept, to say once), but a trace still
// keeps when each repetition ended.
func (c *Context) sampleConditions(b Bench) *sampler {
	var read func() (nvml.Sample, error)
	if dev := c.nvmlDevice(); dev != nil {
		read = dev.Sample
	}
	var trace *Trace
	if b.Trace {
		trace = &Trace{OpsPerRep: len(b.Ops[0])}
	}
	return startSampler(read, trace, conditionsEvery)
}

// sampler reads the GPU every so often from its own goroutine, into
// Conditions and, where it keeps one, a Trace; the Bench's thread tells
// it when each timed repetition ended.
type sampler struct {
	read  func() (nvml.Sample, error) // nil: NVML cannot be read
	start time.Time                   // the trace's zero

	mu    sync.Mutex
	got   Conditions
	trace *Trace // nil unless the Bench asked for one

	stop, done chan struct{}
}

// startSampler takes a first reading now, then one every interval of
// length every, from its own goroutine, until finish.
func startSampler(read func() (nvml.Sample, error), trace *Trace, every time.Duration) *sampler {
	s := &sampler{read: read, start: time.Now(), trace: trace, stop: make(chan struct{}), done: make(chan struct{})}
	if read == nil {
		close(s.done)
		return s
	}
	s.sample()
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.sample()
			}
		}
	}()
	return s
}

// sample reads the GPU once; a reading that fails is left out.
func (s *sampler) sample() {
	at := time.Since(s.start)
	r, err := s.read()
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got.add(r)
	if s.trace != nil {
		s.trace.Samples = append(s.trace.Samples, TraceSample{Ms: msOf(at), SMClockMHz: r.SMClockMHz, MemClockMHz: r.MemClockMHz,
			PowerW: r.PowerW, TempC: r.TempC, Throttle: r.Throttle})
	}
}

// ended notes, for a trace, that a timed repetition ended now, having
// taken device between its CUDA events.
func (s *sampler) ended(device time.Duration) {
	if s.trace == nil {
		return
	}
	at := time.Since(s.start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trace.Reps = append(s.trace.Reps, TraceRep{EndMs: msOf(at), DeviceMs: msOf(device)})
}

// finish stops sampling, takes a last sample, and returns what was seen.
func (s *sampler) finish() (Conditions, *Trace) {
	if s.read != nil {
		close(s.stop)
		<-s.done
		s.sample()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got, s.trace
}

// nvmlDevice is this GPU in NVML, opened on first use; nil where NVML
// cannot be read (why is in c.nvmlErr).
func (c *Context) nvmlDevice() *nvml.Device {
	if c.nvml == nil && c.nvmlErr == nil {
		c.nvml, c.nvmlErr = nvml.Open(c.info.PCIAddress)
	}
	return c.nvml
}
