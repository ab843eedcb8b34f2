package lessons

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"cudarepl/gpu"
	"cudarepl/gpu/remote"
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
// that faults or hangs costs one error and never the caller: a child of
// this process, or one on another host where $CUDAREPL_REMOTE or
// $CUDAREPL_WORKER_CMD says (its kernels then compile there too). Where
// there is no driver or no GPU it returns an Env in replay mode (NoGPU
// says why) and no error: every lesson still runs. A remote host that
// cannot be reached, or has no cudarepl to serve (a *RemoteBinaryError),
// is an error. Close releases the GPU.
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

// Reconnect lets a session whose remote GPU's connection was lost (or
// could not be made again after a fault) connect again at its next
// device call: the REPL calls it before each command, a notebook run
// before each cell, so that one command stops at the first failed call
// and the next one tries again. It does nothing to a session connected,
// local or in replay.
func (s *Session) Reconnect() {
	if w, ok := s.Dev.(interface{ Reconnect() }); ok {
		w.Reconnect()
	}
}

// RemoteBinaryError says that the host named by --remote (or
// $CUDAREPL_REMOTE) has no cudarepl that can serve this one's worker; its
// Installable says whether InstallRemote can copy this one there.
type RemoteBinaryError = remote.BinaryError

// InstallRemote copies this program to the host that $CUDAREPL_REMOTE
// names, where its worker command finds it first (~/.cache/cudarepl/…,
// or the path given after the host), and returns where it went.
func InstallRemote() (string, error) {
	r, err := remote.FromEnv()
	if err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("--remote-install: %w", err)
	}
	return remote.Install(r, exe)
}

// ServeWorker serves one remote worker on this process's standard input
// and output ("cudarepl worker", which a client starts over ssh) and
// returns the exit status; version is the program's.
func ServeWorker(version string) int { return remote.Serve(version, os.Stdin, os.Stdout) }

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
// none and that lessons replay, naming the GPUs the results come from.
func (s *Session) Banner(version string) string {
	if !s.Live() {
		var names []string
		for _, g := range referenceGPUs() {
			names = append(names, g.name)
		}
		if len(names) == 0 { // no lesson has recorded results
			return fmt.Sprintf("cudarepl %s · %v · replay mode", version, s.NoGPU)
		}
		return fmt.Sprintf("cudarepl %s · %v · replay mode: results recorded on %s ('device' says which lesson ran where)",
			version, s.NoGPU, listAnd(names))
	}
	i := s.Dev.Info()
	where := ""
	if h := s.host(); h != "" {
		where = " on " + h
	}
	return fmt.Sprintf("cudarepl %s · %s%s (%s, %d SMs, %.0f GiB) · driver %s, CUDA %s", version, i.Name, where, i.Arch(), i.SMs,
		float64(i.GlobalMem)/(1<<30), i.DriverVersion, i.CUDAVersion)
}

// WriteDevice describes the GPU to w as a table: what the driver reports,
// the libraries' versions, free memory, and why a library did not load.
// Without a GPU it says why, that lessons replay, which GPUs the replayed
// results were recorded on (and the description recorded of each), and
// whether kernels still compile.
func (s *Session) WriteDevice(w io.Writer) {
	if !s.Live() {
		s.writeReference(w)
		return
	}
	info := s.Dev.Info()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range info.Rows() {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	host := s.host()
	if host != "" {
		fmt.Fprintf(tw, "GPU host\t%s (kernels compile there, with its NVRTC)\n", host)
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
	switch {
	case len(missing) > 0 && host != "": // why it did not load is the host's to say
		fmt.Fprintf(tw, "%s\tnot loaded on %s\n", listAnd(missing), host)
	case len(missing) > 0:
		for _, lib := range gpu.LibraryVersions(missing...) {
			if lib.Err != nil { // lessons 10 and 11 replay their results without cuDNN
				fmt.Fprintf(tw, "%s\t%s\n", lib.Name, unavailable(lib.Err))
			}
		}
	}
	tw.Flush()
}

// writeReference is WriteDevice in replay: why there is no GPU, the GPUs
// the lessons' results were recorded on, with the lessons each recorded
// and the description recorded of it, and whether kernels compile here.
func (s *Session) writeReference(w io.Writer) {
	fmt.Fprintf(w, "%v\nreplay mode: the lessons show results recorded on these GPUs, each result labelled with its GPU:\n", s.NoGPU)
	refs := referenceGPUs()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range refs {
		fmt.Fprintf(tw, "  %s\t%s\t%s, driver %s, CUDA %s\n", g.name, lessonRange(g.lessons), dateRange(g.first, g.last), g.driver, g.cuda)
	}
	tw.Flush()
	for _, g := range refs {
		if g.info == nil {
			continue
		}
		fmt.Fprintf(w, "\nThe %s, as recorded on %s:\n", g.name, g.infoDate)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, row := range g.info.Rows()[1:] { // the first row is the name, said above
			fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if v, err := nvrtc.Version(); err == nil {
		fmt.Fprintf(w, "NVRTC %s found: kernels still compile here, for %s, and report their registers and shared memory\n", v, s.arch())
	} else {
		fmt.Fprintf(w, "kernels are not compiled here: %s\n", unavailable(err))
	}
}

// referenceGPU is a GPU that results recorded with the lessons come from.
type referenceGPU struct {
	name, driver, cuda string
	lessons            []int  // the lessons with results from it, in order
	first, last        string // the dates of its results
	info               *gpu.DeviceInfo
	infoDate           string // the day info was recorded
}

// referenceGPUs lists the GPUs the lessons' recorded results come from,
// the one with the most lessons first.
func referenceGPUs() []referenceGPU {
	var out []*referenceGPU
	find := func(r Result) *referenceGPU {
		for _, g := range out {
			if g.name == r.GPU && g.driver == r.Driver && g.cuda == r.CUDA {
				return g
			}
		}
		g := &referenceGPU{name: r.GPU, driver: r.Driver, cuda: r.CUDA, first: r.Date, last: r.Date}
		out = append(out, g)
		return g
	}
	for _, l := range All() {
		for _, r := range l.recorded.Results {
			if r.GPU == "" {
				continue
			}
			g := find(r)
			if !slices.Contains(g.lessons, l.Number) {
				g.lessons = append(g.lessons, l.Number)
			}
			g.first, g.last = min(g.first, r.Date), max(g.last, r.Date)
			var info gpu.DeviceInfo
			if r.Kind == "device" && (g.info == nil || r.Date > g.infoDate) && json.Unmarshal([]byte(r.Detail), &info) == nil {
				g.info, g.infoDate = &info, r.Date
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *referenceGPU) int { return len(b.lessons) - len(a.lessons) })
	refs := make([]referenceGPU, len(out))
	for i, g := range out {
		refs[i] = *g
	}
	return refs
}

// lessonRange writes lesson numbers as runs: "lesson 3", "lessons 1–9,
// 11–14", "lessons 2, 10 and 11".
func lessonRange(ns []int) string {
	slices.Sort(ns)
	var runs []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		switch {
		case j == i:
			runs = append(runs, strconv.Itoa(ns[i]))
		case j == i+1:
			runs = append(runs, strconv.Itoa(ns[i]), strconv.Itoa(ns[j]))
		default:
			runs = append(runs, fmt.Sprintf("%d–%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	if len(ns) == 1 {
		return "lesson " + runs[0]
	}
	if last := runs[len(runs)-1]; !strings.Contains(last, "–") {
		return "lessons " + listAnd(runs) // "2, 10 and 11"
	}
	return "lessons " + strings.Join(runs, ", ")
}

// dateRange is "2026-11-28", or "2026-11-22 to 2026-11-25".
func dateRange(first, last string) string {
	if first == last {
		return first
	}
	return first + " to " + last
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

// WriteVersions says what this machine has of what cudarepl uses, one
// line each: the driver (and the GPU), NVRTC, and the libraries (cuBLAS,
// cuDNN), with the version found, or why not and what would provide it.
func (s *Session) WriteVersions(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if h := s.host(); s.Live() && h != "" {
		// What counts is on the GPU's host: what its worker found there.
		i := s.Dev.Info()
		fmt.Fprintf(tw, "driver\t%s, CUDA %s (%s on %s)\n", i.DriverVersion, i.CUDAVersion, i.Name, h)
		fmt.Fprintf(tw, "NVRTC\t%s\n", orNone(i.NVRTCVersion, h))
		for _, name := range gpu.Libraries() {
			fmt.Fprintf(tw, "%s\t%s\n", name, orNone(i.Libraries[name], h))
		}
		tw.Flush()
		return
	}
	if s.Live() {
		i := s.Dev.Info()
		fmt.Fprintf(tw, "driver\t%s, CUDA %s (%s)\n", i.DriverVersion, i.CUDAVersion, i.Name)
	} else {
		fmt.Fprintf(tw, "driver\t%s: lessons replay their recorded results\n", unavailable(s.NoGPU))
	}
	if v, err := nvrtc.Version(); err == nil {
		fmt.Fprintf(tw, "NVRTC\t%s\n", v)
	} else {
		fmt.Fprintf(tw, "NVRTC\t%s\n", notFound("NVRTC", err))
	}
	for _, lib := range gpu.LibraryVersions() {
		if lib.Err == nil {
			fmt.Fprintf(tw, "%s\t%s\n", lib.Name, lib.Version)
		} else {
			fmt.Fprintf(tw, "%s\t%s\n", lib.Name, notFound(lib.Name, lib.Err))
		}
	}
	tw.Flush()
}

// orNone is version, or that none was found on host.
func orNone(version, host string) string {
	if version == "" {
		return "not found on " + host
	}
	return version + " on " + host
}

// notFound is why the library name is unavailable, without its name where
// the reason starts with it: "not found (libcublas.so.13, …); install …".
func notFound(name string, err error) string {
	r := unavailable(err)
	if rest, ok := strings.CutPrefix(r, name+" "); ok && (strings.HasPrefix(rest, "not found") || strings.HasPrefix(rest, "hidden")) {
		return rest
	}
	return r
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
