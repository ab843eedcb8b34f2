package main

import (
	"io"
	"os"
	"path/filepath"

	"cudarepl/internal/term"
	"cudarepl/lessons"
)

// session is what every command works in: the lessons' env, live on a GPU
// or in replay.
type session struct {
	env *lessons.Env
}

// openSession opens the GPU, or falls back to replay and says why.
// plotDir "" means <workspace>/plots.
func openSession(out io.Writer, plotDir string) (*session, error) {
	ws := lessons.DefaultWorkspace()
	if plotDir == "" {
		plotDir = filepath.Join(ws, "plots")
	}
	env, err := openEnv(lessons.Options{View: lessons.View{Out: term.Output(out), PlotDir: plotDir, Workspace: ws, Width: 80, OneVersion: oneVersion}, Stderr: os.Stderr})
	if err != nil {
		return nil, err
	}
	return &session{env: env}, nil
}

// banner is the one line that opens the REPL.
func (s *session) banner() string { return s.env.Banner(version) }

func (s *session) close() { s.env.Close() }
