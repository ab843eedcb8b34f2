package lessons

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"cudarepl/gpu"
	"cudarepl/nvrtc"
)

// Options configure Open: where the Env's output goes, and how its GPU
// worker runs.
type Options struct {
	View                  // Out is os.Stdout when nil, Workspace DefaultWorkspace() when ""
	Stderr  io.Writer     // what the GPU worker itself prints; os.Stderr when nil
	Timeout time.Duration // how long one device call may run; gpu.DefaultTimeout when 0
}

// Open opens the GPU for the lessons, in a worker process so that a kernel
// that faults or hangs costs one error and never the caller. Where there is
// no driver or no GPU it returns an Env in replay mode (NoGPU says why)
// and no error: every lesson still runs. Close releases the GPU.
func Open(o Options) (*Env, error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Workspace == "" {
		o.Workspace = DefaultWorkspace()
	}
	w, err := gpu.Open(gpu.Options{Stderr: o.Stderr, Timeout: o.Timeout})
	switch {
	case errors.Is(err, gpu.ErrNoGPU):
		return Replay(err, o.View), nil
	case err != nil:
		return nil, err
	}
	env := &Env{Session: newSession(w, nil), View: o.View}
	env.worker, env.timeout, env.stderr = w, o.Timeout, o.Stderr
	return env, nil
}

// Close releases the GPU of an Env from Open; in replay it does nothing.
func (s *Session) Close() error {
	if s.worker == nil {
		return nil
	}
	err := s.worker.Close()
	s.worker, s.Dev = nil, nil
	return err
}

// Banner is the one line that opens a session: the GPU, or why there is
// none and that lessons replay.
func (s *Session) Banner(version string) string {
	if !s.Live() {
		return fmt.Sprintf("cudarepl %s · %v · replay mode: results recorded on a reference GPU", version, s.NoGPU)
	}
	i := s.Dev.Info()
	return fmt.Sprintf("cudarepl %s · %s (%s, %d SMs, %.0f GiB) · driver %s, CUDA %s", version, i.Name, i.Arch(), i.SMs,
		float64(i.GlobalMem)/(1<<30), i.DriverVersion, i.CUDAVersion)
}

// WriteDevice describes the GPU to w as a table: what the driver reports,
// the libraries' versions, free memory, and why a library did not load.
// Without a GPU it says why in one sentence, that lessons replay, and
// whether kernels still compile.
func (s *Session) WriteDevice(w io.Writer) {
	if !s.Live() {
		fmt.Fprintf(w, "%v\nreplay mode: lessons show results recorded on a reference GPU\n", s.NoGPU)
		if v, err := nvrtc.Version(); err == nil {
			fmt.Fprintf(w, "NVRTC %s found: kernels still compile and report their registers and shared memory\n", v)
		}
		return
	}
	info := s.Dev.Info()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range info.Rows() {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	if free, total, err := s.Dev.MemInfo(); err == nil {
		fmt.Fprintf(tw, "memory free\t%.1f of %.1f GiB\n", float64(free)/(1<<30), float64(total)/(1<<30))
	}
	var missing []string // loaded in the worker are in info's rows already
	for _, name := range gpu.Libraries() {
		if _, ok := info.Libraries[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		for _, lib := range gpu.LibraryVersions(missing...) {
			if lib.Err != nil { // lessons 10 and 11 replay their results without cuDNN
				fmt.Fprintf(tw, "%s\t%s\n", lib.Name, unavailable(lib.Err))
			}
		}
	}
	tw.Flush()
}

// WriteMem says how much device memory is free, or that there is no GPU.
func (s *Session) WriteMem(w io.Writer) error {
	if !s.Live() {
		fmt.Fprintf(w, "no GPU: %v\n", s.NoGPU)
		return nil
	}
	free, total, err := s.Dev.MemInfo()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "GPU memory: %.2f GiB free of %.2f GiB (%.2f GiB in use)\n",
		float64(free)/(1<<30), float64(total)/(1<<30), float64(total-free)/(1<<30))
	return nil
}

// WriteVersions says which NVRTC and libraries (cuBLAS, cuDNN) this
// machine has, or why not.
func WriteVersions(w io.Writer) {
	if v, err := nvrtc.Version(); err == nil {
		fmt.Fprintf(w, "NVRTC %s\n", v)
	} else {
		fmt.Fprintf(w, "%v\n", err)
	}
	for _, lib := range gpu.LibraryVersions() {
		if lib.Err == nil {
			fmt.Fprintf(w, "%s %s\n", lib.Name, lib.Version)
		} else {
			fmt.Fprintln(w, unavailable(lib.Err))
		}
	}
}

// unavailable is why a library cannot be used, without the package prefix
// when it is the usual "not found" kind.
func unavailable(err error) string {
	var ue *gpu.UnavailableError
	if errors.As(err, &ue) {
		return ue.Reason
	}
	return err.Error()
}
