package attention

import (
	"fmt"
	"math"
	"math/rand/v2"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/numeric"
)

// The fused softmax the exercise is judged like, and the scale it runs
// with: 1/√d at d = 64, a power of 2, so that scale·x is exact in fp32 and
// the reference sees what the kernel sees.
const (
	maskedName  = "masked_softmax"
	maskedScale = 0.125
)

// maskedBench is the size a passing exercise is timed at: 4 heads of
// S = 4096 queries, causal, 2²⁶ scores.
var maskedBench = lessons.Size{4 * 4096, 4096, 1}

// maskedProblem is the chain's scale, causal mask and softmax as one
// kernel on fp32 scores, at sizes {rows, S} or, causal, {rows, S, 1}: row
// r holds query r mod S's S scores. The checks begin with sizes where S is
// 1 or 3, non-causal before causal, and run to S = 4099, with rows that
// are not a multiple of S and S that is not a multiple of the block.
func maskedProblem() *lessons.Problem {
	return &lessons.Problem{
		Name: "masked softmax", DType: "float32", Unit: "GB/s", Peak: gpu.PeakDRAM, Ceiling: lessons.CeilingCopy, Kernels: "attention.cu",
		CheckSizes: []lessons.Size{
			{1, 1}, {1, 1, 1}, {4, 3}, {6, 3, 1}, {200, 100}, {200, 100, 1}, {514, 257, 1}, {700, 257, 1},
			{3000, 1000}, {2000, 1000, 1}, {4104, 4099, 1},
		},
		Impls: []lessons.Impl{{Name: maskedName,
			Summary: "scale, causal mask and softmax in one launch, a block per row: masked scores are never read, and their probabilities written as 0"}},
		Setup:     setupMasked,
		Memory:    maskedMemory,
		Work:      maskedBytes,
		SizeLabel: maskedLabel,
	}
}

// maskedShape reads a Size{rows, S} or, causal, {rows, S, 1}.
func maskedShape(s lessons.Size) (rows, S int, causal bool) {
	return s[0], s[1], len(s) > 2 && s[2] != 0
}

// maskedLabel writes a size as "200 rows × 100 keys", with ", causal"
// where it is.
func maskedLabel(s lessons.Size) string {
	rows, S, causal := maskedShape(s)
	l := plural(rows, "row") + " × " + plural(S, "key")
	if causal {
		l += ", causal"
	}
	return l
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// keysSeen is how many keys the query of row r sees: all S, or,
// causal, those up to its own position r mod S.
func keysSeen(r, S int, causal bool) int {
	if causal {
		return r%S + 1
	}
	return S
}

// maskedBytes is the least traffic of a masked softmax: the scores each
// query sees read once, and every probability, 0 or not, written once.
func maskedBytes(s lessons.Size) float64 {
	rows, S, causal := maskedShape(s)
	seen := 0.0
	for r := range rows {
		seen += float64(keysSeen(r, S, causal))
	}
	return 4*seen + 4*float64(rows)*float64(S)
}

// maskedMemory is x, y and the guard behind y on the device; on the host
// x, the float64 reference, y read back and x on its way to the device.
func maskedMemory(s lessons.Size) lessons.Memory {
	n := int64(s[0]) * int64(s[1])
	return lessons.Memory{Device: 8*n + 4*guardWords, Host: 4*n + 8*n + 4*n + 4*n}
}

// guardWords is the room behind y, poisoned, where a kernel that runs past
// the last row would write.
const guardWords = 1024

// The kinds of row the scores cycle through, row r of kind r mod
// maskedKinds, each given as the scores before the scale of 1/8: lesson
// 12's kinds of row, its three ranges times 8 and its random rows four
// times as spread (N(0, 16²) here, N(0, 4²) there).
const (
	maskedRandom   = iota // N(0, 16²): scaled, a spread of a few units
	maskedLarge           // 800 … 1440: scaled, 100 … 180, where exp overflows without the max subtracted
	maskedNegative        // −1600 … −960: scaled, below −120, where a max starting at 0, or a masked 0, wins
	maskedWide            // −240 … 240: scaled, ±30
	maskedKinds
)

// maskedInput fills rows×S scores from seed, the same for the same seed
// however many goroutines fill them.
func maskedInput(rows, S int, seed uint64) []float32 {
	x := make([]float32, rows*S)
	numeric.Parallel(rows, max(1, (1<<16)/S), func(r0, r1 int) {
		rng := rand.New(rand.NewPCG(seed, uint64(r0)))
		for r := r0; r < r1; r++ {
			row := x[r*S : (r+1)*S]
			for j := range row {
				switch r % maskedKinds {
				case maskedRandom:
					row[j] = float32(16 * rng.NormFloat64())
				case maskedLarge:
					row[j] = 800 + 640*rng.Float32()
				case maskedNegative:
					row[j] = -1600 + 640*rng.Float32()
				case maskedWide:
					row[j] = -240 + 480*rng.Float32()
				}
			}
		}
	})
	return x
}

// maskedReference is the softmax over the keys each row's query sees of
// scale·x, in float64, and 0 for the keys it does not.
func maskedReference(x []float32, rows, S int, scale float64, causal bool) []float64 {
	y := make([]float64, len(x))
	numeric.Parallel(rows, max(1, (1<<16)/S), func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			keys := keysSeen(r, S, causal)
			row, out := x[r*S:r*S+keys], y[r*S:r*S+keys]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, scale*float64(v))
			}
			d := 0.0
			for j, v := range row {
				out[j] = math.Exp(scale*float64(v) - m)
				d += out[j]
			}
			for j := range out {
				out[j] /= d
			}
		}
	})
	return y
}

// maskedCompare checks y against want: each element within tol of its
// value relative to want + 1/keys, the mean probability of its row. A
// masked key's want is 0, so anything but 0 there fails; an element far
// below the mean may round to 0, but a row scaled wrong, or a NaN, fails
// wherever it is.
func maskedCompare(y []float32, want []float64, rows, S int, causal bool, tol float64) (numeric.CheckStats, error) {
	st := numeric.CheckStats{Tol: tol, N: len(want)}
	var first *numeric.CheckError
	bad := 0
	for r := range rows {
		floor := 1 / float64(keysSeen(r, S, causal))
		for j := range S {
			i := r*S + j
			g, w := float64(y[i]), want[i]
			e := math.Abs(g-w) / (w + floor)
			if math.IsNaN(e) {
				e = math.Inf(1)
			}
			st.MaxRelErr = math.Max(st.MaxRelErr, e)
			if e <= tol {
				continue
			}
			bad++
			if first == nil {
				first = &numeric.CheckError{Name: "y", Index: []int{r, j}, Got: g, Want: w, Tol: tol}
			}
		}
	}
	if first != nil {
		first.Bad, first.Total = bad, len(want)
		return st, first
	}
	return st, nil
}

// mcase is one masked softmax on the GPU.
type mcase struct {
	env     *lessons.Env
	rows, S int
	causal  bool
	x       []float32
	want    []float64 // the reference, computed at the first check
	dx, dy  gpu.DevicePtr
}

func setupMasked(env *lessons.Env, s lessons.Size) (lessons.Case, error) {
	rows, S, causal := maskedShape(s)
	c := &mcase{env: env, rows: rows, S: S, causal: causal, x: maskedInput(rows, S, uint64(rows)<<32|uint64(S)<<1|boolBit(causal))}
	var err error
	if c.dx, err = gpu.Upload(env.Dev, c.x); err != nil {
		return nil, err
	}
	if c.dy, err = env.Dev.Alloc(4 * int64(rows*S+guardWords)); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// Ops launches the kernel as masked_softmax is launched: a block per row.
func (c *mcase) Ops(_ lessons.Impl, k gpu.Kernel, block int) ([]gpu.Op, error) {
	return []gpu.Op{gpu.Launch{Kernel: k, Grid: gpu.Dim(c.rows), Block: gpu.Dim(block),
		Args: []gpu.Arg{gpu.Ptr(c.dx), gpu.Ptr(c.dy), gpu.Int32(int32(c.rows)), gpu.Int32(int32(c.S)),
			gpu.Float32(maskedScale), gpu.Int32(int32(boolBit(c.causal)))}}}, nil
}

// Poison fills y and the guard with NaN.
func (c *mcase) Poison() error {
	return c.env.Dev.Run(gpu.Memset{Dst: c.dy, Value: numeric.Poison32, Count: int64(c.rows*c.S + guardWords)})
}

// Check compares y with the float64 reference, then checks that nothing
// was written past the last row.
func (c *mcase) Check() (numeric.CheckStats, error) {
	n := c.rows * c.S
	all, err := gpu.Download[float32](c.env.Dev, c.dy, n+guardWords)
	if err != nil {
		return numeric.CheckStats{}, err
	}
	if c.want == nil {
		c.want = maskedReference(c.x, c.rows, c.S, maskedScale, c.causal)
	}
	st, err := maskedCompare(all[:n], c.want, c.rows, c.S, c.causal, numeric.TolFP32Sum(c.S))
	if err != nil {
		return st, err
	}
	return st, numeric.PastTheEnd("y", all[n:], n)
}

func (c *mcase) Free() { c.env.FreeAll(c.dx, c.dy) }
