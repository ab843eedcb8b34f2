package lessons

import (
	"bufio"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"

	"cudarepl/gpu/share"
)

// Memory is what one problem instance takes, in bytes, known before
// anything is allocated.
type Memory struct {
	Device int64 // device memory its case allocates
	Host   int64 // host memory: inputs, the float64 reference, and the copies on their way to the GPU
}

// OutOfMemoryError is a size refused before anything was allocated, or
// whose allocation the device refused: it needs more memory than is free.
type OutOfMemoryError struct {
	What       string // e.g. "vector add n=2^33"
	Where      string // "device" or "host"
	Need, Free int64  // bytes; Free is 0 when the device refused an allocation it was thought to fit
	// Budget, where set, is the worker's device-memory budget (the value
	// of share.MemLimitEnv, e.g. "8GiB"), which Free is what is left of.
	Budget string
}

func (e *OutOfMemoryError) Error() string {
	if e.Free == 0 {
		return fmt.Sprintf("%s needs %s of %s memory, and the %s could not allocate it", e.What, GiB(e.Need), e.Where, e.Where)
	}
	if e.Budget != "" {
		return fmt.Sprintf("%s needs %s of %s memory; %s is free of this worker's budget of %s (%s)", e.What, GiB(e.Need), e.Where, GiB(e.Free), e.Budget, share.MemLimitEnv)
	}
	return fmt.Sprintf("%s needs %s of %s memory; %s is free", e.What, GiB(e.Need), e.Where, GiB(e.Free))
}

// GiB writes a byte count in GiB with one decimal, or in MiB below 1 GiB.
func GiB(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// fits reports whether size s of p, run by impl (the zero Impl: any),
// fits in the memory free now, on the device and on the host, as an
// *OutOfMemoryError when it does not.
func (e *Env) fits(p *Problem, impl Impl, s Size) error {
	if p.Memory == nil {
		return nil
	}
	need := p.need(impl, s)
	what := p.Name + " " + powerLabel(p, s)
	if free, _, err := e.Dev.MemInfo(); err == nil && need.Device > free {
		oom := &OutOfMemoryError{What: what, Where: "device", Need: need.Device, Free: free}
		if limit, err := share.MemLimit(); err == nil && limit > 0 {
			oom.Budget = os.Getenv(share.MemLimitEnv) // a local worker's, which shares this process's environment
		}
		return oom
	}
	if free, ok := hostAvailable(); ok && need.Host > free {
		return &OutOfMemoryError{What: what, Where: "host", Need: need.Host, Free: free}
	}
	return nil
}

// need is what size s of p takes when impl runs it: the problem's memory
// and the impl's own beyond it.
func (p *Problem) need(impl Impl, s Size) Memory {
	m := p.Memory(s)
	if impl.Extra != nil {
		m.Device += impl.Extra(s)
	}
	return m
}

// powerLabel is p's label for s, with a power of two written 2^k: "n=2^33"
// reads better than "n=8589934592" in a sentence.
func powerLabel(p *Problem, s Size) string {
	if k, ok := powerOfTwo(s); ok && p.SizeLabel == nil {
		return fmt.Sprintf("n=2^%d", k)
	}
	return p.label(s)
}

// powerOfTwo says whether s is one number, 2^k with k ≥ 10, the sizes
// that read better as a power of two than in digits, and gives k.
func powerOfTwo(s Size) (int, bool) {
	if len(s) == 1 && s[0] >= 1<<10 && s[0]&(s[0]-1) == 0 {
		return bits.TrailingZeros64(uint64(s[0])), true
	}
	return 0, false
}

// hostAvailable is the host memory available to a new allocation without
// swapping (MemAvailable in /proc/meminfo); ok is false where it cannot be
// read, and then nothing is refused for the host's sake.
func hostAvailable() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// MatmulMemory returns the memory of an M×N×K product whose inputs take
// in bytes per element and whose output takes out: A, B and C on the
// device; on the host, A and B as uploaded and as float64 for the
// reference, one more copy of the larger on its way through the worker,
// and C read back as float32.
func MatmulMemory(in, out int64) func(s Size) Memory {
	return func(s Size) Memory {
		ab, c := int64(s[0])*int64(s[2])+int64(s[2])*int64(s[1]), int64(s[0])*int64(s[1])
		return Memory{Device: in*ab + out*c + 4, Host: (in+8)*ab + in*ab + (out+4)*c}
	}
}
