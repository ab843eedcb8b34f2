package lessons

import (
	"fmt"
	"strings"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/numeric"
)

// Size is a problem size: {n} for vectors, {m, n, k} for matrix products.
type Size []int

func (s Size) String() string {
	if len(s) == 1 {
		return fmt.Sprintf("n=%d", s[0])
	}
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, "×")
}

// Impl is one way to compute a lesson's problem: a kernel version, a
// library call, or a learner's kernel judged like a version.
type Impl struct {
	Name    string // the kernel's name, or the library's, e.g. "vadd_v2", "cuBLAS"
	Summary string // what it changes and why, from the kernel's // vN: line
	Library bool   // runs a library, not a kernel of the lesson
	// Kernels are the lesson's kernels a library impl launches besides the
	// library (Setup loads them through Env.Kernel): each can be edited and
	// tried, checked and timed as this impl.
	Kernels []string
	Like    string // launch it as this impl is launched (exercises)
	Block   int    // default threads per block; 256 when 0
	// File is the file in package kernels the impl's kernel comes from,
	// where it is not the problem's (lesson 6 times lesson 5's matmul_v3
	// beside its batched kernels).
	File string

	// Requires, if set, says why the impl cannot run size s (e.g. "needs K
	// and N multiples of 4"), or nil. Such sizes are refused, not failed.
	Requires func(s Size) error
	// Arch, if set, is the one architecture the impl's kernel runs on, e.g.
	// "sm_90a" for Hopper's wgmma; elsewhere it is refused.
	Arch string
	// MinArch, if set, is the oldest architecture the impl's kernel runs
	// on, e.g. "sm_90" for thread-block clusters; older GPUs refuse it.
	MinArch string
	// Peak, if set, is the resource bounding this impl where it differs
	// from the problem's, e.g. gpu.PeakFP8 for an FP8 product.
	Peak string
	// Bytes, if set, is the DRAM traffic this impl's code must cause at
	// size s, where it differs from the problem's Bytes (an unfused chain
	// moves more than the fused kernel): a profile shows it beside what
	// DRAM moved.
	Bytes func(s Size) float64
	// Extra, if set, is the device memory the impl needs at size s beyond
	// the problem's Memory (e.g. attention's S×S scores), known before
	// anything is allocated: a size where it does not fit is refused.
	Extra func(s Size) int64
	// Footprint, if set, is the device memory one run of this impl
	// touches at size s, where that is less than the case holds (a case
	// that keeps every variant's buffers): the L2 is flushed before each
	// timed run where the footprint fits in 4× L2.
	Footprint func(s Size) int64

	// plan is a learner's plan of the work, read by their Exercise's Plan,
	// for an exercise that is not a kernel: the case builds the impl's ops
	// from it (Plans.In gives it back typed).
	plan fmt.Stringer
}

// refuses returns why impl cannot run size s on env's GPU, or nil.
func (im Impl) refuses(env *Env, s Size) error {
	if im.Arch != "" && env.arch() != im.Arch {
		return fmt.Errorf("needs %s (%s); kernels here compile for %s", im.Arch, archNames[im.Arch], env.arch())
	}
	if im.MinArch != "" && archNumber(env.arch()) < archNumber(im.MinArch) {
		return fmt.Errorf("needs %s or newer (%s); kernels here compile for %s", im.MinArch, archNames[im.MinArch], env.arch())
	}
	if im.Requires == nil {
		return nil
	}
	return im.Requires(s)
}

// archNames says what it takes to compile for an architecture.
var archNames = map[string]string{
	"sm_90a": "a Hopper GPU, compute capability 9.0, and NVRTC 12 or newer",
	"sm_90":  "compute capability 9.0, Hopper",
}

// archNumber is an architecture's compute capability times ten: 90 for
// "sm_90" and "sm_90a", 0 for a name it cannot read.
func archNumber(arch string) int {
	n := 0
	for _, c := range strings.TrimPrefix(arch, "sm_") {
		if c < '0' || c > '9' {
			break
		}
		n = 10*n + int(c-'0')
	}
	return n
}

// Problem is what a lesson's kernels compute, how to check it and how much
// work it is.
type Problem struct {
	Name  string // e.g. "vector add"
	DType string // e.g. "float32"
	Unit  string // "GB/s", "TFLOP/s", or "kernels/ms" for launch rates

	// Every result is shown beside two references. Peak names the
	// resource whose peak (NVIDIA's figure, or computed from the GPU's
	// attributes where NVIDIA's is not in gpu/peak.go) bounds the
	// throughput: gpu.PeakDRAM, or a precision such as gpu.PeakFP16 (an
	// impl's own Peak overrides it). No result can pass it. The measured
	// baseline is what this GPU reaches doing the same work another way,
	// which a good kernel may beat: for a memory-bound problem the
	// device-to-device copy (Ceiling: CeilingCopy, measured once a
	// session); otherwise the library impl named Baseline, at the same
	// size.
	Peak     string
	Ceiling  string
	Baseline string

	CheckSizes []Size // include sizes that are not multiples of any block size
	// Reference says what the outputs are checked against, for the check's
	// line: "a float64 CPU reference" when empty.
	Reference string
	Impls     []Impl // in ladder order, library baselines last

	// Setup uploads fresh random inputs of size s and computes the reference.
	Setup func(env *Env, s Size) (Case, error)
	// Memory is what Setup and the impls take at size s, known before
	// anything is allocated: a size that does not fit is refused at once,
	// with what it needs and what is free.
	Memory func(s Size) Memory
	// Work is what one run does, in the unit's numerator: bytes moved for
	// GB/s, floating-point operations for TFLOP/s, kernels for kernels/ms.
	Work func(s Size) float64
	// Bytes, if set, is the DRAM traffic the code must cause at size s, in
	// bytes, which a profile shows beside what DRAM moved; Work where the
	// unit is GB/s, when nil.
	Bytes func(s Size) float64
	// SizeLabel names a size in tables; Size.String when nil.
	SizeLabel func(s Size) string
	// Kernels is the file in package kernels that the impls come from; the
	// lesson's when "".
	Kernels string
}

// label names size s in tables and results.
func (p *Problem) label(s Size) string {
	if p.SizeLabel != nil {
		return p.SizeLabel(s)
	}
	return s.String()
}

// Case is one problem instance on the GPU, ready for any impl.
type Case interface {
	// Ops returns the device work of impl (k is its loaded kernel; the zero
	// Kernel for a library impl) with block threads per block.
	Ops(impl Impl, k gpu.Kernel, block int) ([]gpu.Op, error)
	// Poison fills the outputs with NaN, so that an unwritten element fails.
	Poison() error
	// Check reads the outputs back and compares them with the reference.
	Check() (numeric.CheckStats, error)
	// Free releases the case's device memory.
	Free()
}

// PoisonWord is the 32-bit word an output of type t is filled with before
// a kernel runs (Case.Poison), so that an element never written fails its
// check: numeric.Poison16 for 16-bit types, else numeric.Poison32.
func PoisonWord(t gpu.DType) uint32 {
	if t.Size() == 2 {
		return numeric.Poison16
	}
	return numeric.Poison32
}

// impl returns the problem's impl called name.
func (p *Problem) impl(name string) (Impl, error) {
	var names []string
	for _, im := range p.Impls {
		if im.Name == name {
			return im, nil
		}
		names = append(names, im.Name)
	}
	return Impl{}, fmt.Errorf("lessons: %s has no variant %q (it has: %s)", p.Name, name, strings.Join(names, ", "))
}

// impls returns the problem's impls called names, in that order, or all of
// them where names is nil.
func (p *Problem) impls(names []string) ([]Impl, error) {
	if names == nil {
		return p.Impls, nil
	}
	var out []Impl
	for _, n := range names {
		im, err := p.impl(n)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, nil
}

// launchAs is the impl whose launch shape impl uses: itself, or for a
// learner's kernel the version it is judged like.
func (p *Problem) launchAs(impl Impl) Impl {
	if impl.Like == "" {
		return impl
	}
	if like, err := p.impl(impl.Like); err == nil {
		like.plan = impl.plan
		return like
	}
	return impl
}

// block is the threads per block impl is launched with: Block, or 256.
func (im Impl) block() int {
	if im.Block > 0 {
		return im.Block
	}
	return 256
}

// ValidBlock says why b threads per block cannot be launched, or nil.
func ValidBlock(b int) error {
	if b < 1 || b > 1024 {
		return fmt.Errorf("lessons: %d threads per block: a block holds 1 to 1024", b)
	}
	return nil
}

// units converts Work per second into the problem's unit.
func (p *Problem) units(perSecond float64) float64 {
	switch p.Unit {
	case "TFLOP/s":
		return perSecond / 1e12
	case "kernels/ms":
		return perSecond / 1e3
	}
	return perSecond / 1e9
}

// LadderImpls returns the versions of an embedded kernel file as impls, in
// ladder order, each named after its kernel and summed up by its // vN:
// line. It panics on a malformed file, which package kernels' tests catch.
func LadderImpls(file string) []Impl {
	src, err := kernels.Source(file)
	if err != nil {
		panic(err)
	}
	vs, err := kernels.Ladder(src)
	if err != nil {
		panic(err)
	}
	impls := make([]Impl, len(vs))
	for i, v := range vs {
		impls[i] = Impl{Name: v.Name, Summary: v.Summary}
	}
	return impls
}

// MatmulFLOPs is the work of an M×N×K matrix product: 2·M·N·K.
func MatmulFLOPs(s Size) float64 { return 2 * float64(s[0]) * float64(s[1]) * float64(s[2]) }

// MatmulBytes is the least DRAM traffic of an m×n×k product, for
// Problem.Bytes: A and B read once, with in bytes an element, and C
// written once, with out.
func MatmulBytes(in, out int) func(s Size) float64 {
	return func(s Size) float64 {
		m, n, k := float64(s[0]), float64(s[1]), float64(s[2])
		return float64(in)*(m*k+k*n) + float64(out)*m*n
	}
}

// problemOf is override, else the lesson's problem.
func problemOf(l *Lesson, override *Problem) (*Problem, error) {
	if override != nil {
		return override, nil
	}
	if l.Problem == nil {
		return nil, fmt.Errorf("lessons: %s has no problem to run", l.Slug)
	}
	return l.Problem, nil
}
