package nvrtc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DefaultArch is the architecture Compile targets when none is given and no
// GPU says otherwise: the H100 the course's results were recorded on.
const DefaultArch = "sm_90"

// Source is CUDA C to compile. Kernels are looked up by name, so declare
// them extern "C" to keep C++ name mangling away.
type Source struct {
	Name string // file name used in errors, e.g. "kernels/vadd.cu"
	Code string
	// Headers are what Code may #include "by name" though no file holds
	// them: include name → text, handed to NVRTC with the source.
	Headers map[string]string
	// Focus, if set, is the file name that #line directives in Code give
	// the lines a reader wrote themselves (a learner's function spliced
	// into a course file): a compile error then names that file and shows
	// only the diagnostics on those lines, or, where none is there, only
	// the errors elsewhere.
	Focus string
}

// CompileOptions tunes Compile. The zero value compiles for DefaultArch
// with the disk cache on.
type CompileOptions struct {
	Arch    string   // e.g. "sm_90"; DefaultArch when empty
	Defines []string // each NAME or NAME=VALUE becomes -DNAME=VALUE
	Flags   []string // further NVRTC options, e.g. "--use_fast_math"
	NoCache bool     // compile even when the disk cache holds the image
	// Names lists C++ kernels (declared without extern "C") to find by
	// name: NVRTC reports the mangled symbol each compiled to, and the
	// image loads them by the names given here.
	Names []string
}

// Image is a compiled module: machine code for one architecture, and what
// ptxas reported about each kernel in it.
type Image struct {
	Key     string // hex SHA-256 of everything that went into the compile
	Name    string // the source name
	Arch    string
	NVRTC   string // NVRTC version that compiled it
	CUBIN   []byte
	PTX     string // the PTX NVRTC assembled CUBIN from: the instructions as the compiler wrote them
	Log     string // NVRTC's log, warnings and the ptxas report included
	Kernels []KernelResources
	Cached  bool              // read from the disk cache rather than compiled now
	Lowered map[string]string // a C++ kernel's name → its mangled symbol, for CompileOptions.Names
}

// Kernel returns the resources ptxas reported for the named kernel, by its
// name or, for a C++ kernel compiled with CompileOptions.Names, the name
// the source gives it.
func (img *Image) Kernel(name string) (KernelResources, bool) {
	sym := img.Symbol(name)
	for _, k := range img.Kernels {
		if k.Name == sym {
			k.Name = name
			return k, true
		}
	}
	return KernelResources{}, false
}

// Symbol is the symbol the kernel name compiled to: name itself for an
// extern "C" kernel, its mangled name for a C++ one in CompileOptions.Names.
func (img *Image) Symbol(name string) string {
	if s, ok := img.Lowered[name]; ok {
		return s
	}
	return name
}

// KernelResources is what one kernel takes from an SM, as ptxas reports it.
type KernelResources struct {
	Name         string
	Registers    int   // per thread
	SharedStatic int64 // bytes of __shared__ arrays sized at compile time
	StackFrame   int64 // bytes per thread
	SpillStores  int64 // bytes per thread written to local memory for lack of registers
	SpillLoads   int64
}

// Compile compiles src with NVRTC into an Image for opt.Arch, or returns it
// from the disk cache. A source that does not compile gives a *CompileError.
func Compile(src Source, opt CompileOptions) (*Image, error) {
	n, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	if src.Name == "" {
		src.Name = "kernel.cu"
	}
	opts := compileFlags(opt)
	img := &Image{Name: src.Name, Arch: opts[0][len("--gpu-architecture="):], NVRTC: n.version}
	img.Key = cacheKey(n.version, append(opts, opt.Names...), src)

	dir := cacheDir()
	if !opt.NoCache && dir != "" {
		cubin, err := os.ReadFile(filepath.Join(dir, img.Key+".cubin"))
		ptx, perr := os.ReadFile(filepath.Join(dir, img.Key+".ptx"))
		if err == nil && perr == nil {
			log, _ := os.ReadFile(filepath.Join(dir, img.Key+".log"))
			names, _ := os.ReadFile(filepath.Join(dir, img.Key+".names"))
			img.CUBIN, img.PTX, img.Log, img.Cached = cubin, string(ptx), string(log), true
			img.Kernels = parsePtxasLog(img.Log)
			img.Lowered = parseLowered(string(names))
			if len(img.Lowered) == len(opt.Names) {
				return img, nil
			}
		}
	}
	c, err := n.compile(src.Name, src.Code, src.Headers, opts, opt.Names)
	var ce *CompileError
	if errors.As(err, &ce) && src.Focus != "" {
		return nil, ce.focus(src.Focus)
	}
	if err != nil {
		return nil, err
	}
	img.CUBIN, img.PTX, img.Log, img.Lowered = c.cubin, c.ptx, c.log, c.lowered
	img.Kernels = parsePtxasLog(img.Log)
	if dir != "" {
		// A cache that cannot be written only costs a compile next time.
		_ = writeFileAtomic(filepath.Join(dir, img.Key+".log"), []byte(img.Log))
		_ = writeFileAtomic(filepath.Join(dir, img.Key+".names"), []byte(formatLowered(img.Lowered)))
		_ = writeFileAtomic(filepath.Join(dir, img.Key+".ptx"), []byte(img.PTX))
		_ = writeFileAtomic(filepath.Join(dir, img.Key+".cubin"), img.CUBIN)
	}
	return img, nil
}

// formatLowered writes name → symbol pairs one a line, tab-separated, for
// the disk cache; parseLowered reads them back.
func formatLowered(m map[string]string) string {
	var b strings.Builder
	for name, sym := range m {
		fmt.Fprintf(&b, "%s\t%s\n", name, sym)
	}
	return b.String()
}

func parseLowered(s string) map[string]string {
	var m map[string]string
	for _, line := range strings.Split(s, "\n") {
		if name, sym, ok := strings.Cut(line, "\t"); ok {
			if m == nil {
				m = map[string]string{}
			}
			m[name] = sym
		}
	}
	return m
}

// compileFlags returns the NVRTC options for opt; the architecture is first.
func compileFlags(opt CompileOptions) []string {
	arch := opt.Arch
	if arch == "" {
		arch = DefaultArch
	}
	opts := []string{"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v"}
	for _, d := range includeDirs() {
		opts = append(opts, "--include-path="+d)
	}
	for _, d := range opt.Defines {
		opts = append(opts, "-D"+d)
	}
	return append(opts, opt.Flags...)
}

// cacheKey hashes everything that decides the compiled bytes.
func cacheKey(nvrtcVersion string, opts []string, src Source) string {
	h := sha256.New()
	parts := append([]string{"cudarepl-image-v1", nvrtcVersion, src.Name, src.Code}, opts...)
	for _, name := range slices.Sorted(maps.Keys(src.Headers)) {
		parts = append(parts, "header", name, src.Headers[name])
	}
	for _, part := range parts {
		fmt.Fprintf(h, "%d:%s\x00", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cacheDir is $CUDAREPL_CACHE, else <user cache dir>/cudarepl/kernels; ""
// when neither can be made.
func cacheDir() string {
	dir := os.Getenv("CUDAREPL_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "cudarepl", "kernels")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	return dir
}

func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

var (
	ptxasEntry = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	ptxasFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`Used (\d+) registers`)
	ptxasSmem  = regexp.MustCompile(`(\d+) bytes smem`)
)

// parsePtxasLog reads the per-kernel report that --ptxas-options=-v adds to
// the log. Each report opens with "Compiling entry function 'NAME'".
func parsePtxasLog(log string) []KernelResources {
	var out []KernelResources
	var cur *KernelResources
	atoi := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	for _, line := range strings.Split(log, "\n") {
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			out = append(out, KernelResources{Name: m[1]})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if m := ptxasFrame.FindStringSubmatch(line); m != nil {
			cur.StackFrame, cur.SpillStores, cur.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		}
		if m := ptxasUsed.FindStringSubmatch(line); m != nil {
			cur.Registers = int(atoi(m[1]))
			if s := ptxasSmem.FindStringSubmatch(line); s != nil {
				cur.SharedStatic = atoi(s[1])
			}
		}
	}
	return out
}
