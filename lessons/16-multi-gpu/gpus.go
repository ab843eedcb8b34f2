package multigpu

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// gpusStep lists the GPUs the worker sees: on a machine with several,
// what each is; without, the ones the lesson was recorded on.
func gpusStep(env *lessons.Env, l *lessons.Lesson, step string) error {
	rs, err := env.LiveOr(func() ([]lessons.Result, error) {
		n := env.Dev.Info().Devices
		var rs []lessons.Result
		for i := range n {
			d, err := gpu.On(env.Dev, i)
			if err != nil {
				return rs, fmt.Errorf("GPU %d: %w", i, err)
			}
			info := d.Info()
			b, _ := json.Marshal(info)
			rs = append(rs, env.Record(lessons.Result{Lesson: l.Slug, Step: step, Kind: "gpu", Variant: fmt.Sprintf("GPU %d", i),
				Detail: string(b), Passed: true}))
		}
		return rs, nil
	}, func() ([]lessons.Result, error) { return recorded(env, l, step, "gpu"), nil })
	if err != nil || len(rs) == 0 {
		return err
	}
	infos := make([]gpu.DeviceInfo, len(rs))
	peersKnown := false // results recorded before cudarepl asked have none
	for i, r := range rs {
		if err := json.Unmarshal([]byte(r.Detail), &infos[i]); err != nil {
			return fmt.Errorf("%s: its description cannot be read: %w", r.Variant, err)
		}
		peersKnown = peersKnown || infos[i].PeerAccess != nil
	}
	t := &lessons.Table{Headers: []string{"GPU", "name", "memory", "SMs", "L2", "NCCL"}, Right: []bool{false, false, true, true, true, false}}
	if peersKnown {
		t.Headers, t.Right = append(t.Headers, "reads directly"), append(t.Right, false)
		t.Notes = append(t.Notes, "Reads directly: the GPUs whose memory this one's kernels and copies reach without the host (peer access, cuDeviceCanAccessPeer).")
	}
	for i, r := range rs {
		info := infos[i]
		nccl := info.Libraries["NCCL"]
		if nccl == "" {
			nccl = "not found"
		}
		row := []string{r.Variant, info.Name, fmt.Sprintf("%.1f GiB", float64(info.GlobalMem)/(1<<30)),
			fmt.Sprint(info.SMs), fmt.Sprintf("%d MiB", info.L2Bytes>>20), nccl}
		if peersKnown {
			names := []string{}
			for _, j := range info.PeerAccess {
				names = append(names, fmt.Sprintf("GPU %d", j))
			}
			row = append(row, cmp.Or(strings.Join(names, ", "), "none"))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes, lessons.ResultSet{Results: rs}.Source())
	if len(rs) < 2 {
		t.Notes = append(t.Notes, "The steps below need two GPUs or more; with one, they show what was recorded with the lesson.")
	}
	env.PrintTable(t)
	return nil
}
