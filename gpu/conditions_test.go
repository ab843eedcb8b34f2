package gpu

import (
	"testing"

	"cudarepl/nvml"
)

// TestConditions: samples taken during a bench add up to the range of the
// SM clock, the highest readings, and every reason the clocks were held
// but idle; the line says so.
func TestConditions(t *testing.T) {
	var c Conditions
	if c.String() != "" {
		t.Errorf("no samples: %q, want nothing", c.String())
	}
	for _, s := range []nvml.Sample{
		{SMClockMHz: 1980, MemClockMHz: 2619, PowerW: 210, PowerLimitW: 700, TempC: 41, Throttle: 0x1},
		{SMClockMHz: 1410, MemClockMHz: 2619, PowerW: 699.5, PowerLimitW: 700, TempC: 58, Throttle: 0x4},
		{SMClockMHz: 1230, MemClockMHz: 2619, PowerW: 688, PowerLimitW: 700, TempC: 61, Throttle: 0x4 | 0x1},
	} {
		c.add(s)
	}
	want := Conditions{Samples: 3, SMClockMHz: [2]int{1230, 1980}, MemClockMHz: 2619, PowerW: 699.5, PowerLimitW: 700, TempC: 61, Throttle: []string{"power cap"}}
	if c.Samples != want.Samples || c.SMClockMHz != want.SMClockMHz || c.PowerW != want.PowerW || c.TempC != want.TempC ||
		len(c.Throttle) != 1 || c.Throttle[0] != "power cap" {
		t.Errorf("conditions = %+v, want %+v", c, want)
	}
	if got, line := c.String(), "SM clock 1230–1980 MHz, memory 2619 MHz, up to 700 W of 700 W, 61 °C; clocks held by: power cap"; got != line {
		t.Errorf("String = %q, want %q", got, line)
	}
	if m := (Conditions{}).Merge(c); m.Samples != 3 || m.SMClockMHz != c.SMClockMHz {
		t.Errorf("Merge into nothing = %+v, want %+v", m, c)
	}
	one := Conditions{Samples: 1, SMClockMHz: [2]int{1755, 1755}, MemClockMHz: 2619, PowerW: 300, PowerLimitW: 700, TempC: 45}
	if got := one.String(); got != "SM clock 1755 MHz, memory 2619 MHz, up to 300 W of 700 W, 45 °C" {
		t.Errorf("one sample: %q", got)
	}
}
