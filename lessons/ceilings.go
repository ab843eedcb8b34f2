package lessons

import (
	"fmt"
	"sync"

	"cudarepl/gpu"
)

// CeilingCopy names the ceiling of memory-bound work: a device-to-device
// copy, GB/s counting bytes read and written.
const CeilingCopy = "copy"

// ceiling is a measured ceiling results are compared with.
type ceiling struct {
	display string // e.g. "device-to-device copy"
	measure func(e *Env) (Result, error)
}

// ceilings holds every ceiling by name.
var ceilings = map[string]ceiling{
	CeilingCopy: {"device-to-device copy", func(e *Env) (Result, error) { return e.measureCopy(256 << 20) }},
}

// RegisterCeiling adds a ceiling that problems (Problem.Ceiling) and steps
// (Env.Ceiling) may name: what display calls it, and how measure measures
// it on the GPU the lessons run on, once a session (and once a round of a
// sweep measured in rounds). A lesson whose ceiling needs a library the
// framework does not know (cuBLAS) registers it from its init. It panics
// if the name is taken.
func RegisterCeiling(name, display string, measure func(e *Env) (Result, error)) {
	if _, dup := ceilings[name]; dup {
		panic("lessons: ceiling " + name + " registered twice")
	}
	ceilings[name] = ceiling{display, measure}
}

// Ceiling returns the named ceiling, measuring it on first use. The
// result's Variant is its display name and Throughput its value.
func (e *Env) Ceiling(name string) (Result, error) {
	if r, ok := e.ceilings[name]; ok {
		return r, nil
	}
	return e.measureCeiling(name)
}

// ceilingOnce returns what gives the named ceiling to the points of a
// round of a sweep: the session's (Ceiling), or where fresh, the ceiling
// measured again on the first call and that same result after, so that
// the points of a round are compared with the ceiling of their round.
// Nothing is measured until a point asks.
func (e *Env) ceilingOnce(name string, fresh bool) func() (Result, error) {
	if !fresh {
		return func() (Result, error) { return e.Ceiling(name) }
	}
	return sync.OnceValues(func() (Result, error) { return e.measureCeiling(name) })
}

// measureCeiling measures the named ceiling now, and keeps it as the
// session's.
func (e *Env) measureCeiling(name string) (Result, error) {
	if !e.Live() {
		return Result{}, fmt.Errorf("lessons: ceiling %s: no GPU", name)
	}
	c, ok := ceilings[name]
	if !ok {
		return Result{}, fmt.Errorf("lessons: no ceiling %q", name)
	}
	r, err := c.measure(e)
	if err != nil {
		return r, fmt.Errorf("measure %s: %w", c.display, err)
	}
	r.Kind, r.Variant = "ceiling", c.display
	e.stamp(&r)
	if e.ceilings == nil {
		e.ceilings = map[string]Result{}
	}
	e.ceilings[name] = r
	return r, nil
}

// measureCopy times a device-to-device copy of bytes, which reads and
// writes each byte once: no kernel that must do both can beat it by much.
func (s *Session) measureCopy(bytes int64) (Result, error) {
	d := s.Dev
	src, err := d.Alloc(bytes)
	if err != nil {
		return Result{}, err
	}
	defer d.Free(src)
	dst, err := d.Alloc(bytes)
	if err != nil {
		return Result{}, err
	}
	defer d.Free(dst)
	if err := d.Run(gpu.Memset{Dst: src, Value: 0x3f800000, Count: bytes / 4}); err != nil {
		return Result{}, err
	}
	t, err := d.Bench(gpu.Bench{Name: "device-to-device copy", Ops: [][]gpu.Op{{gpu.Copy{Kind: gpu.DeviceToDevice, Dst: uint64(dst), Src: uint64(src), Bytes: bytes}}}})
	if err != nil {
		return Result{}, err
	}
	st := t.Stats()
	return Result{Size: fmt.Sprintf("%d MiB", bytes>>20), Dims: []int{int(bytes)}, DType: "bytes", Unit: "GB/s",
		Throughput: st.Rate(float64(2*bytes)) / 1e9}.WithTimes(st), nil
}
