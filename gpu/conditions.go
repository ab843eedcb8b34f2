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

// sampleConditions starts sampling the GPU, from another thread, and
// returns what stops it and gives what it saw; nothing where NVML cannot
// be read (the reason is kept, to say once).
func (c *Context) sampleConditions() func() Conditions {
	dev := c.nvmlDevice()
	if dev == nil {
		return func() Conditions { return Conditions{} }
	}
	var mu sync.Mutex
	var got Conditions
	sample := func() {
		if s, err := dev.Sample(); err == nil {
			mu.Lock()
			got.add(s)
			mu.Unlock()
		}
	}
	sample()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(conditionsEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() Conditions {
		close(stop)
		<-done
		sample()
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// nvmlDevice is this GPU in NVML, opened on first use; nil where NVML
// cannot be read (why is in c.nvmlErr).
func (c *Context) nvmlDevice() *nvml.Device {
	if c.nvml == nil && c.nvmlErr == nil {
		c.nvml, c.nvmlErr = nvml.Open(c.info.PCIAddress)
	}
	return c.nvml
}
