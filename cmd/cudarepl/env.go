package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// session is what every command works in: the lessons' env, live on a GPU
// or in replay, and the device to close at the end.
type session struct {
	env *lessons.Env
	dev *gpu.Worker // nil in replay
}

// openSession opens the GPU, or falls back to replay and says why.
// plotDir "" means <workspace>/plots.
func openSession(out io.Writer, plotDir string) (*session, error) {
	ws := lessons.DefaultWorkspace()
	if plotDir == "" {
		plotDir = filepath.Join(ws, "plots")
	}
	env := &lessons.Env{Out: out, PlotDir: plotDir, Workspace: ws, Width: 80}
	dev, err := gpu.Open(gpu.Options{Stderr: os.Stderr})
	switch {
	case errors.Is(err, gpu.ErrNoGPU):
		env.NoGPU = err
		return &session{env: env}, nil
	case err != nil:
		return nil, err
	}
	env.Dev = dev
	return &session{env: env, dev: dev}, nil
}

// banner is the one line that opens the REPL.
func (s *session) banner() string {
	if s.dev == nil {
		return fmt.Sprintf("cudarepl %s · %v · replay mode: results recorded on a reference GPU", version, s.env.NoGPU)
	}
	i := s.dev.Info()
	return fmt.Sprintf("cudarepl %s · %s (%s, %d SMs, %.0f GiB) · driver %s, CUDA %s", version, i.Name, i.Arch(), i.SMs,
		float64(i.GlobalMem)/(1<<30), i.DriverVersion, i.CUDAVersion)
}

func (s *session) close() {
	if s.dev != nil {
		s.dev.Close()
	}
}
