package multigpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/nccl"
)

// gpus is the worker's GPUs, each as a Device, and the buffers a step
// allocated on each, freed together.
type gpus struct {
	devs  []gpu.Device
	bufs  [][]gpu.DevicePtr
	hosts []gpu.HostPtr // on the first GPU's context, pinned and portable
}

// openGPUs returns the first n GPUs of env's worker (every GPU where n is
// 0), or an error saying how many there are where there are fewer than 2.
func openGPUs(env *lessons.Env, n int) (*gpus, error) {
	have := env.Dev.Info().Devices
	if n == 0 {
		n = have
	}
	if have < 2 || n > have {
		return nil, fmt.Errorf("%w: this machine has %s", errOneGPU, lessons.Count(have, "GPU"))
	}
	g := &gpus{devs: make([]gpu.Device, n), bufs: make([][]gpu.DevicePtr, n)}
	for i := range n {
		d, err := gpu.On(env.Dev, i)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		g.devs[i] = d
	}
	return g, nil
}

// errOneGPU is why a step that needs several GPUs shows recorded results.
var errOneGPU = errors.New("This step needs two GPUs or more")

// errNoNCCL is why a step that needs NCCL shows recorded results.
var errNoNCCL = errors.New("This step needs NCCL, which was not found where the GPUs are")

// haveNCCL reports whether the worker loaded NCCL, and says why not (with
// what to install) where it did not.
func haveNCCL(env *lessons.Env) error {
	if env.Dev.Info().Libraries["NCCL"] == "" {
		return fmt.Errorf("%w: %s", errNoNCCL, nccl.InstallHint)
	}
	return nil
}

// alloc allocates bytes on GPU i, freed with the others by free.
func (g *gpus) alloc(i int, bytes int64) (gpu.DevicePtr, error) {
	p, err := g.devs[i].Alloc(bytes)
	if err != nil {
		return 0, fmt.Errorf("GPU %d: %w", i, err)
	}
	g.bufs[i] = append(g.bufs[i], p)
	return p, nil
}

// allocEach allocates bytes on every GPU.
func (g *gpus) allocEach(bytes int64) ([]gpu.DevicePtr, error) {
	out := make([]gpu.DevicePtr, len(g.devs))
	for i := range g.devs {
		p, err := g.alloc(i, bytes)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// allocHost allocates pinned host memory, portable to every GPU's context.
func (g *gpus) allocHost(bytes int64) (gpu.HostPtr, error) {
	p, err := g.devs[0].AllocHost(bytes, true)
	if err != nil {
		return 0, err
	}
	g.hosts = append(g.hosts, p)
	return p, nil
}

// free frees everything alloc and allocHost allocated.
func (g *gpus) free() {
	for i, ps := range g.bufs {
		for _, p := range ps {
			g.devs[i].Free(p)
		}
		g.bufs[i] = nil
	}
	for _, p := range g.hosts {
		g.devs[0].FreeHost(p)
	}
	g.hosts = nil
}

// n is how many GPUs take part.
func (g *gpus) n() int { return len(g.devs) }

// measuredMulti is env.Measured for a step that needs several GPUs: on a
// machine with one GPU it says so and shows what was recorded with the
// lesson, as replay does.
func measuredMulti(env *lessons.Env, l *lessons.Lesson, step, kind string, live func() ([]lessons.Result, error)) ([]lessons.Result, bool, error) {
	rs, err := env.LiveOr(func() ([]lessons.Result, error) {
		rs, err := live()
		if !errors.Is(err, errOneGPU) && !errors.Is(err, errNoNCCL) {
			return rs, err
		}
		fmt.Fprintf(env.Out, "%v. What it shows below was recorded with the lesson.\n", err)
		return recorded(env, l, step, kind), nil
	}, func() ([]lessons.Result, error) { return recorded(env, l, step, kind), nil })
	return rs, err == nil && len(rs) > 0, err
}

// recorded returns the results of kind (several kinds joined by "|")
// recorded for step, or says that there are none.
func recorded(env *lessons.Env, l *lessons.Lesson, step, kind string) []lessons.Result {
	var rs []lessons.Result
	for _, k := range strings.Split(kind, "|") {
		rs = append(rs, l.Recorded().Filter(step, k)...)
	}
	if len(rs) == 0 {
		fmt.Fprintf(env.Out, "No results were recorded for this step.\n")
		return nil
	}
	if !env.Live() {
		env.ReplayNotice()
	}
	return rs
}

// multiDetail is what a result measured on several GPUs keeps beside its
// times, as JSON in its Detail.
type multiDetail struct {
	GPUs    int       `json:"gpus"`                 // how many took part
	Bytes   int64     `json:"bytes"`                // the size counted for the bandwidth
	AlgBW   float64   `json:"algbw_gbs"`            // bytes over the median time, GB/s
	BusBW   float64   `json:"busbw_gbs"`            // AlgBW times the collective's bus factor
	Ceiling float64   `json:"ceiling,omitempty"`    // the link's, measured in the same run, GB/s
	Ratio   float64   `json:"ratio,omitempty"`      // of this result to what it is compared with
	Against string    `json:"against,omitempty"`    // what Ratio compares with
	Steps   int       `json:"steps,omitempty"`      // operations a run enqueues
	PerGPU  []float64 `json:"per_gpu_ms,omitempty"` // each GPU's median, ms
}

// detailOf reads r's multiDetail.
func detailOf(r lessons.Result) (multiDetail, error) {
	var d multiDetail
	if err := json.Unmarshal([]byte(r.Detail), &d); err != nil {
		return d, fmt.Errorf("%s at %s: its result cannot be read: %w", r.Variant, r.Size, err)
	}
	return d, nil
}

// withDetail returns r with d as its Detail.
func withDetail(r lessons.Result, d multiDetail) lessons.Result {
	b, _ := json.Marshal(d)
	r.Detail = string(b)
	return r
}

// timed runs m and returns its rep times' summary and each GPU's median.
func timed(env *lessons.Env, m gpu.Multi) (gpu.Stats, []float64, error) {
	res, err := gpu.RunMulti(env.Dev, m)
	if err != nil {
		return gpu.Stats{}, nil, err
	}
	per := make([]float64, len(res.PerGPU))
	for i, ts := range res.PerGPU {
		per[i] = float64(gpu.Summarize(ts).Median) / 1e6
	}
	return gpu.Summarize(res.Times), per, nil
}

// gbs is bytes over d, in GB/s.
func gbs(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e9
}

// bytesLabel names a size in bytes: "4 KiB", "256 MiB", "1 GiB".
func bytesLabel(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}

// sizesBy4 is from to to bytes, each 4 times the last.
func sizesBy4(from, to int64) []int64 {
	var out []int64
	for b := from; b <= to; b *= 4 {
		out = append(out, b)
	}
	return out
}

// reps is how many timed runs a size gets: enough that the small ones,
// a few microseconds each, are not one noisy sample, and the large ones
// stay under a second in all.
func reps(bytes int64) int {
	if bytes >= 256<<20 {
		return 10
	}
	return 30
}

// progress reports how far a step is, where the view shows progress.
func progress(env *lessons.Env, done, total int, what string) {
	if env.Progress != nil {
		env.Progress(done, total, what)
	}
}

// reachesPrevious reports whether every GPU of g reads the memory of the
// GPU before it in the ring directly (peer access), as ring v2's kernel
// needs; where one does not, the GPU that does not and the one it cannot
// reach.
func (g *gpus) reachesPrevious() (ok bool, from, to int) {
	for i, d := range g.devs {
		prev := mod(i-1, g.n())
		if !slices.Contains(d.Info().PeerAccess, prev) {
			return false, i, prev
		}
	}
	return true, 0, 0
}
