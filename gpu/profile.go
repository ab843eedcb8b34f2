package gpu

import (
	"errors"
	"fmt"
)

// Profile is a Request that runs ops once for a profiler (Nsight Compute,
// started around the worker with --profile-from-start off): prepared
// first, then, between cuProfilerStart and cuProfilerStop, a marker kernel
// and the ops' work, waited for. The marker, ProfileMarker, is launched
// with Mark+1 blocks of one thread, so that whoever reads the profiler's
// report finds where each Profile's kernels begin and which one they
// belong to: a library call launches kernels whose names nobody knows in
// advance. Nothing outside that window is profiled: not the setup, the
// check or the L2 flush.
type Profile struct {
	Mark int
	Ops  []Op
}

// ProfileMarker is the name of the kernel a Profile launches before its
// ops.
const ProfileMarker = "cudarepl_profile_mark"

// profileMarkPTX is the marker: a kernel that does nothing. Written as PTX
// by hand (it has no body to compile), for the driver to compile.
const profileMarkPTX = `.version 6.0
.target sm_52
.address_size 64

.visible .entry cudarepl_profile_mark()
{
	ret;
}
`

func (p Profile) String() string { return fmt.Sprintf("profile %d", p.Mark) }

// Serve runs the profile on the GPU thread.
func (p Profile) Serve(x *Exec) (any, error) {
	c := x.c
	d := c.d
	if d.cuProfilerStart == nil || d.cuProfilerStop == nil {
		return nil, errors.New("gpu: this driver has no cuProfilerStart")
	}
	if p.Mark < 0 {
		return nil, fmt.Errorf("gpu: profile mark %d is negative", p.Mark)
	}
	mark, err := x.State(profileMarkKey{}, func() (any, error) { return c.loadProfileMark() })
	if err != nil {
		return nil, err
	}
	run, err := c.prepare(p.Ops)
	if err != nil {
		return nil, err
	}
	defer run.release()
	if err := c.sync("before the profile"); err != nil {
		return nil, err
	}
	if err := d.check(d.cuProfilerStart(), "cuProfilerStart", ""); err != nil {
		return nil, err
	}
	err = d.check(d.launch(mark.(*profileMark).fn, Dim(p.Mark+1), Dim(1), 0, c.stream, nil), "cuLaunchKernel", ProfileMarker)
	if err == nil {
		err = run.enqueue()
	}
	if err == nil {
		err = c.sync("profiled work")
	}
	return nil, errors.Join(err, d.check(d.cuProfilerStop(), "cuProfilerStop", ""))
}

// profileMarkKey keys the loaded marker in the context's library state.
type profileMarkKey struct{}

// profileMark is the loaded marker kernel.
type profileMark struct {
	d          *driverAPI
	module, fn uintptr
}

// Close unloads the marker's module.
func (m *profileMark) Close() error {
	return m.d.check(m.d.cuModuleUnload(m.module), "cuModuleUnload", ProfileMarker)
}

func (c *Context) loadProfileMark() (*profileMark, error) {
	m := &profileMark{d: c.d}
	var err error
	if m.module, m.fn, err = c.d.loadPTX(profileMarkPTX, ProfileMarker); err != nil {
		return nil, err
	}
	return m, nil
}

func init() { registerType(Profile{}) }
