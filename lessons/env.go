package lessons

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/nvrtc"
	"cudarepl/plots"
)

// Env is where lessons run: a Session, on a GPU (Dev set) or in replay
// (Dev nil), seen through a View that says where output, tables, figures
// and progress go. An Env comes from Open or Replay.
//
// Copies of an Env share its Session: what one compiles, loads, measures
// or records, every copy has. A copy may see it through another view
// (WithView), and the framework's own copies carry a learner's edit or a
// step's launch to the calls that read them (withEdit, withLaunch), as
// http.Request.WithContext carries a context: nothing is set on an Env
// and cleared after a call, so nothing can stay set by mistake.
type Env struct {
	*Session
	View

	edit   *Edit  // the learner's kernel, run in place of the course's: withEdit
	launch launch // the launch of the Run step now running: withLaunch
}

// Session is what every copy of an Env shares: the GPU and its worker,
// what was compiled, loaded and measured on it, and what was said once.
// A Session comes with an Env, from Open or Replay.
type Session struct {
	Dev   gpu.Device // nil: replay mode
	NoGPU error      // why there is no GPU, in replay mode

	// Results collects what ran live in this session.
	Results ResultSet

	images   map[string]*nvrtc.Image // compiled, by source and names
	imagesMu *sync.Mutex             // a compile Ctrl-C stopped may still be filling images
	kernels  map[string]gpu.Kernel   // loaded on Dev, by source and name
	ceilings map[string]Result       // measured on Dev, by name
	noted    map[string]bool         // what was said once and need not be said again

	worker     *gpu.Worker // the worker Open started, which Close stops
	timeout    time.Duration
	stderr     io.Writer
	sanitizing string // the compute-sanitizer tool the worker runs under, if any
}

// newSession returns a Session on dev (nil: replay, for the reason noGPU).
func newSession(dev gpu.Device, noGPU error) *Session {
	return &Session{Dev: dev, NoGPU: noGPU, images: map[string]*nvrtc.Image{}, imagesMu: new(sync.Mutex), kernels: map[string]gpu.Kernel{},
		ceilings: map[string]Result{}, noted: map[string]bool{}}
}

// View is where an Env's output goes, and what its caller changes of the
// steps it runs: each copy of an Env has its own.
type View struct {
	Out       io.Writer       // prose, tables, charts
	Ctx       context.Context // cancelled by Ctrl-C; nil means never
	PlotDir   string          // where figures are written; "" writes none
	Workspace string          // where exercise copies live; DefaultWorkspace() when ""
	Width     int             // columns for terminal charts; 80 when 0
	Sizes     []Size          // overrides the sizes of size sweeps when set
	Blocks    []int           // overrides the block sizes of block-size sweeps when set
	Rounds    int             // overrides the rounds of every sweep when set (Sweep.Rounds)
	Progress  func(done, total int, what string)
	// OneVersion, if set, is the command that lists the checks of one
	// version of lesson slug where this output is read ("run softmax_v1" in
	// the REPL, "cudarepl check softmax --variant softmax_v1" on the
	// command line): a summary of many checks names it. Without it a
	// summary names no command.
	OneVersion func(slug, variant string) string

	// ShowTable and ShowFigure, when set, display tables and figures in
	// place of printing them as text: a notebook shows HTML and images.
	ShowTable  func(t *Table)
	ShowFigure func(f plots.Figure) error
}

// Replay returns an Env in replay mode, seen through v: what Open returns
// where there is no GPU, saying why, for callers that must not look for
// one (tests, a notebook checked without a GPU).
func Replay(why error, v View) *Env { return &Env{Session: newSession(nil, why), View: v} }

// WithView returns a copy of e seen through v: the same session (its GPU,
// what it compiled and measured), with v's output, Ctrl-C and sizes. e
// itself is unchanged, so what a call is given in v cannot outlast it.
func (e *Env) WithView(v View) *Env {
	c := *e
	c.View = v
	return &c
}

// withEdit returns a copy of e that runs the learner's kernel ed in place
// of the course's: Kernel compiles theirs, and what record keeps is
// marked as theirs.
func (e *Env) withEdit(ed Edit) *Env {
	c := *e
	c.edit = &ed
	return &c
}

// launch is how a Run step launches its kernel.
type launch struct {
	block int
	size  Size
}

// withLaunch returns a copy of e whose Launch is block and size.
func (e *Env) withLaunch(block int, size Size) *Env {
	c := *e
	c.launch = launch{block, size}
	return &c
}

// Launch is the threads per block and the size the Run step now running
// launches its kernel with: the learner's where they changed them, else
// the step's own.
func (e *Env) Launch() (block int, size Size) { return e.launch.block, e.launch.size }

// Live reports whether the env has a GPU.
func (s *Session) Live() bool { return s.Dev != nil }

// once reports whether key is new to this session, and remembers it: what
// should be said once a session, such as why kernels cannot be compiled
// here, is said when once first returns true.
func (s *Session) once(key string) bool {
	if s.noted[key] {
		return false
	}
	s.noted[key] = true
	return true
}

// notCompiled says why kernels are not compiled here: in full the first
// time in a session, and briefly after that.
func (e *Env) notCompiled(err error) {
	if e.once("not compiled") {
		e.printf("(kernels are not compiled here: %v)\n", firstLine(err.Error()))
		return
	}
	e.printf("(not compiled: %s)\n", shortReason(err))
}

// shortReason is the first clause of an error, without package prefixes:
// "NVRTC not found" from "gpu: NVRTC not found (libnvrtc.so.13, …); install …".
func shortReason(err error) string {
	s := firstLine(err.Error())
	s = strings.TrimPrefix(s, "gpu: ")
	if i := strings.IndexAny(s, "(;"); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// arch is the architecture kernels are compiled for: the GPU's, as far
// as the NVRTC that compiles them knows it (the worker's own, where it
// runs on another host).
func (s *Session) arch() string {
	if s.Live() {
		v, _ := nvrtc.Version()
		if s.host() != "" {
			v = s.Dev.Info().NVRTCVersion
		}
		return s.Dev.Info().FeatureArch(v)
	}
	return nvrtc.DefaultArch
}

// compiler is a device that compiles kernels where it runs them: a
// gpu.Worker, whose remote worker compiles with its host's NVRTC.
type compiler interface {
	Compile(src nvrtc.Source, opt nvrtc.CompileOptions) (*nvrtc.Image, error)
}

// host is where the session's GPU is: the host of a remote worker, or ""
// for this machine (and in replay).
func (s *Session) host() string {
	if h, ok := s.Dev.(interface{ Host() string }); ok {
		return h.Host()
	}
	return ""
}

// Compile compiles src for this env's GPU (or the reference GPU in replay),
// once per session.
func (s *Session) Compile(src nvrtc.Source) (*nvrtc.Image, error) { return s.compile(src, nil) }

// compile is Compile, finding the C++ kernels names by their names too.
func (s *Session) compile(src nvrtc.Source, names []string) (*nvrtc.Image, error) {
	key := src.Name + "\x00" + src.Code + "\x00" + strings.Join(names, "\x00")
	s.imagesMu.Lock()
	img, ok := s.images[key]
	s.imagesMu.Unlock()
	if ok {
		return img, nil
	}
	compile := nvrtc.Compile
	if c, ok := s.Dev.(compiler); ok {
		compile = c.Compile // where the GPU is
	}
	img, err := compile(src, nvrtc.CompileOptions{Arch: s.arch(), Names: names})
	if err != nil {
		return nil, err
	}
	s.imagesMu.Lock()
	s.images[key] = img
	s.imagesMu.Unlock()
	return img, nil
}

// Compile is Session.Compile, stopped by Ctrl-C (ErrStopped) within
// moments: NVRTC cannot be interrupted, so a compile Ctrl-C stops goes on
// alone, and what it makes is kept for the next time it is asked for.
func (e *Env) Compile(src nvrtc.Source) (*nvrtc.Image, error) { return e.compile(src, nil) }

// compile is Env.Compile, finding the C++ kernels names by their names too.
func (e *Env) compile(src nvrtc.Source, names []string) (*nvrtc.Image, error) {
	if e.Ctx == nil {
		return e.Session.compile(src, names)
	}
	if e.canceled() != nil {
		return nil, ErrStopped
	}
	type compiled struct {
		img *nvrtc.Image
		err error
	}
	done := make(chan compiled, 1)
	go func() {
		img, err := e.Session.compile(src, names)
		done <- compiled{img, err}
	}()
	select {
	case c := <-done:
		return c.img, c.err
	case <-e.Ctx.Done():
		return nil, ErrStopped
	}
}

// Kernel compiles src and loads its kernel name on the GPU; the learner's
// version of it, where e carries their edit (withEdit).
func (e *Env) Kernel(src nvrtc.Source, name string) (gpu.Kernel, error) {
	if !e.Live() {
		return gpu.Kernel{}, fmt.Errorf("kernel %s: no GPU (%v)", name, e.NoGPU)
	}
	if ed := e.edit; ed != nil && ed.Kernel == name {
		src = ed.in(src)
	}
	key := src.Name + "\x00" + name + "\x00" + src.Code
	if k, ok := e.kernels[key]; ok {
		return k, nil
	}
	img, err := e.Compile(src)
	if err != nil {
		return gpu.Kernel{}, err
	}
	k, err := e.Dev.LoadKernel(img, name)
	if err != nil {
		return gpu.Kernel{}, err
	}
	e.kernels[key] = k
	return k, nil
}

// FileKernel loads kernel name from file in package kernels, as Kernel
// does: compiled once a session, and a learner's edit of it used instead.
func (e *Env) FileKernel(file, name string) (gpu.Kernel, error) {
	src, err := kernels.Source(file)
	if err != nil {
		return gpu.Kernel{}, err
	}
	return e.Kernel(src, name)
}

// implKernel loads the kernel that runs impl, a version from the problem's
// file or the impl's own. Library impls need none.
func (e *Env) implKernel(l *Lesson, p *Problem, impl Impl) (gpu.Kernel, error) {
	if impl.Library {
		return gpu.Kernel{}, nil
	}
	src, err := kernelSource(l, cmp.Or(impl.File, p.Kernels))
	if err != nil {
		return gpu.Kernel{}, err
	}
	return e.Kernel(src, impl.Name)
}

// kernelSource returns the kernel file named file, or lesson l's when "".
func kernelSource(l *Lesson, file string) (nvrtc.Source, error) {
	if file == "" {
		file = l.Kernels
	}
	if file == "" {
		return nvrtc.Source{}, fmt.Errorf("%s has no kernels", l.Slug)
	}
	return kernels.Source(file)
}

// stamp fills in what r ran on and when.
func (s *Session) stamp(r *Result) {
	info := s.Dev.Info()
	r.GPU, r.Driver, r.CUDA = info.Name, info.DriverVersion, info.CUDAVersion
	r.Date = time.Now().UTC().Format(time.DateOnly)
	r.Mode = "live"
}

// record keeps r among the session's results, replacing an earlier result
// of the same step, kind, variant, size and block; where e carries the
// learner's edit, as theirs.
func (e *Env) record(r Result) {
	if e.edit != nil && !strings.HasSuffix(r.Variant, yours) {
		r.Variant += yours // measured with the learner's kernel in the course's place
	}
	for i, old := range e.Results.Results {
		if old.Lesson == r.Lesson && old.Step == r.Step && old.Kind == r.Kind && old.Variant == r.Variant && old.Size == r.Size && old.Block == r.Block {
			e.Results.Results[i] = r
			return
		}
	}
	e.Results.Results = append(e.Results.Results, r)
}

// DefaultWorkspace is $CUDAREPL_WORKSPACE, else ~/cudarepl.
func DefaultWorkspace() string {
	if d := os.Getenv("CUDAREPL_WORKSPACE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "cudarepl-workspace"
	}
	return filepath.Join(home, "cudarepl")
}

// Record stamps r with this GPU and the date and keeps it among the
// session's results; for steps that measure or read something themselves.
func (e *Env) Record(r Result) Result {
	e.stamp(&r)
	e.record(r)
	return r
}

// FreeAll frees the device memory at ptrs, skipping zeros: what a Case's
// Free does with a case that Setup may have left half made.
func (s *Session) FreeAll(ptrs ...gpu.DevicePtr) {
	for _, p := range ptrs {
		if p != 0 {
			s.Dev.Free(p)
		}
	}
}

// UploadPair uploads the inputs a and b and allocates out bytes for the
// result: the device memory of a two-input case. On failure nothing stays
// allocated.
func UploadPair[T gpu.Element](env *Env, a, b []T, out int64) (da, db, dc gpu.DevicePtr, err error) {
	if da, err = gpu.Upload(env.Dev, a); err == nil {
		if db, err = gpu.Upload(env.Dev, b); err == nil {
			dc, err = env.Dev.Alloc(out)
		}
	}
	if err != nil {
		env.FreeAll(da, db)
		return 0, 0, 0, err
	}
	return da, db, dc, nil
}
