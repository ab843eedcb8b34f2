package nvml

import (
	"fmt"
	"strings"
	"sync"

	"cudarepl/internal/dl"
)

// api holds the NVML entry points, bound from libnvidia-ml.so.1.
// See https://docs.nvidia.com/deploy/nvml-api/.
type api struct {
	lib *dl.Library

	nvmlInit                                  func() int32
	nvmlErrorString                           func(r int32) *byte
	nvmlDeviceGetHandleByPciBusId             func(bus string, dev *uintptr) int32
	nvmlDeviceGetClockInfo                    func(dev uintptr, typ int32, mhz *uint32) int32
	nvmlDeviceGetPowerUsage                   func(dev uintptr, mw *uint32) int32
	nvmlDeviceGetEnforcedPowerLimit           func(dev uintptr, mw *uint32) int32
	nvmlDeviceGetTemperature                  func(dev uintptr, sensor int32, c *uint32) int32
	nvmlDeviceGetCurrentClocksThrottleReasons func(dev uintptr, reasons *uint64) int32
	// The same, under the name newer drivers give it; one of the two is bound.
	nvmlDeviceGetCurrentClocksEventReasons func(dev uintptr, reasons *uint64) int32
}

// nvmlClockType_t and nvmlTemperatureSensors_t values, from nvml.h.
const (
	clockSM  = 1
	clockMem = 2
	tempGPU  = 0
)

var load = sync.OnceValues(func() (*api, error) {
	lib, err := dl.Open("nvml", "NVML not found", "it comes with the NVIDIA driver", "libnvidia-ml.so.1", "nvml.dll")
	if err != nil {
		return nil, err
	}
	a := &api{lib: lib}
	if err := lib.Bind(map[string]any{
		"nvmlInit_v2":                               &a.nvmlInit,
		"nvmlErrorString":                           &a.nvmlErrorString,
		"nvmlDeviceGetHandleByPciBusId_v2":          &a.nvmlDeviceGetHandleByPciBusId,
		"nvmlDeviceGetClockInfo":                    &a.nvmlDeviceGetClockInfo,
		"nvmlDeviceGetPowerUsage":                   &a.nvmlDeviceGetPowerUsage,
		"nvmlDeviceGetEnforcedPowerLimit":           &a.nvmlDeviceGetEnforcedPowerLimit,
		"nvmlDeviceGetTemperature":                  &a.nvmlDeviceGetTemperature,
		"nvmlDeviceGetCurrentClocksThrottleReasons": &a.nvmlDeviceGetCurrentClocksThrottleReasons,
		"nvmlDeviceGetCurrentClocksEventReasons":    &a.nvmlDeviceGetCurrentClocksEventReasons,
	}, "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetCurrentClocksEventReasons"); err != nil {
		return nil, err
	}
	if a.nvmlDeviceGetCurrentClocksThrottleReasons == nil {
		a.nvmlDeviceGetCurrentClocksThrottleReasons = a.nvmlDeviceGetCurrentClocksEventReasons
	}
	if a.nvmlDeviceGetCurrentClocksThrottleReasons == nil {
		return nil, &dl.UnavailableError{Reason: lib.Name + " has neither nvmlDeviceGetCurrentClocksThrottleReasons nor nvmlDeviceGetCurrentClocksEventReasons"}
	}
	if err := a.check(a.nvmlInit(), "nvmlInit_v2"); err != nil {
		return nil, err
	}
	return a, nil
})

// check turns an nvmlReturn_t into an error naming the call.
func (a *api) check(r int32, call string) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("nvml: %s: %s", call, dl.GoString(a.nvmlErrorString(r)))
}

// Device is one GPU as NVML sees it.
type Device struct {
	a *api
	h uintptr
}

// Open finds the GPU at PCI address bus, as CUDA reports it (e.g.
// "0000:1b:00.0"): the one the CUDA context is on, whatever order NVML
// counts GPUs in.
func Open(bus string) (*Device, error) {
	a, err := load()
	if err != nil {
		return nil, err
	}
	d := &Device{a: a}
	if err := a.check(a.nvmlDeviceGetHandleByPciBusId(bus, &d.h), "nvmlDeviceGetHandleByPciBusId_v2 "+bus); err != nil {
		return nil, err
	}
	return d, nil
}

// Sample is what a GPU reports at one moment.
type Sample struct {
	SMClockMHz, MemClockMHz int
	PowerW, PowerLimitW     float64
	TempC                   int
	Throttle                Reasons
}

// Sample reads the GPU's clocks, power, temperature and throttle reasons
// now.
func (d *Device) Sample() (Sample, error) {
	a := d.a
	var sm, mem, mw, limit, temp uint32
	var reasons uint64
	for _, c := range []struct {
		r    int32
		call string
	}{
		{a.nvmlDeviceGetClockInfo(d.h, clockSM, &sm), "nvmlDeviceGetClockInfo SM"},
		{a.nvmlDeviceGetClockInfo(d.h, clockMem, &mem), "nvmlDeviceGetClockInfo memory"},
		{a.nvmlDeviceGetPowerUsage(d.h, &mw), "nvmlDeviceGetPowerUsage"},
		{a.nvmlDeviceGetEnforcedPowerLimit(d.h, &limit), "nvmlDeviceGetEnforcedPowerLimit"},
		{a.nvmlDeviceGetTemperature(d.h, tempGPU, &temp), "nvmlDeviceGetTemperature"},
		{a.nvmlDeviceGetCurrentClocksThrottleReasons(d.h, &reasons), "nvmlDeviceGetCurrentClocksThrottleReasons"},
	} {
		if err := a.check(c.r, c.call); err != nil {
			return Sample{}, err
		}
	}
	return Sample{SMClockMHz: int(sm), MemClockMHz: int(mem), PowerW: float64(mw) / 1e3, PowerLimitW: float64(limit) / 1e3,
		TempC: int(temp), Throttle: Reasons(reasons)}, nil
}

// Reasons are why the clocks are held below their maximum
// (nvmlClocksThrottleReasons, a bit each).
type Reasons uint64

// reasonNames names the bits of Reasons, from nvml.h.
var reasonNames = []struct {
	bit  Reasons
	name string
}{
	{0x1, "idle"}, {0x2, "application clocks"}, {0x4, "power cap"}, {0x8, "hardware slowdown"},
	{0x10, "sync boost"}, {0x20, "software thermal slowdown"}, {0x40, "hardware thermal slowdown"},
	{0x80, "power brake"}, {0x100, "display clock"},
}

// Names lists the reasons set, in NVML's order.
func (r Reasons) Names() []string {
	var out []string
	for _, n := range reasonNames {
		if r&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	if rest := r &^ 0x1ff; rest != 0 {
		out = append(out, fmt.Sprintf("reason %#x", uint64(rest)))
	}
	return out
}

func (r Reasons) String() string {
	if r == 0 {
		return "none"
	}
	return strings.Join(r.Names(), ", ")
}
