package hellogpu

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// TestCheckWhere: what the threads wrote is checked on the CPU, one kind
// of mistake at a time.
func TestCheckWhere(t *testing.T) {
	const threads, n = 4, 8
	where, warps := records[0], records[1]
	// good is what where_am_i writes for n threads, a guard of two behind
	// each output; block b runs on SM 10 + b.
	good := func() (got [3][]int32) {
		for o := range got {
			got[o] = []int32{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1}
		}
		for i := range n {
			got[0][i], got[1][i], got[2][i] = int32(i/threads), int32(i%threads), int32(10+i/threads)
		}
		return got
	}
	tests := []struct {
		desc    string
		rec     record
		mangle  func(got [3][]int32)
		wantErr string
	}{
		{"every thread right", where, func([3][]int32) {}, ""},
		{"a wrong block", where, func(g [3][]int32) { g[0][5] = 0 }, "check: block[5] = 0, want 1 (thread 1 of block 1)"},
		{"a wrong thread", where, func(g [3][]int32) { g[1][2] = 7 }, "check: thread[2] = 7, want 2 (thread 2 of block 0)"},
		{"an SM numbered past the count is fine", where, func(g [3][]int32) { copy(g[2], []int32{500, 500, 500, 500}) }, ""},
		{"an SM never written", where, func(g [3][]int32) { g[2][0] = -1 }, "check: sm[0] was never written"},
		{"a block split over SMs", where, func(g [3][]int32) { g[2][6] = 3 }, "check: thread 2 of block 1 ran on SM 3, thread 0 on SM 11"},
		{"a write past the end", where, func(g [3][]int32) { g[1][9] = 0 }, "check: thread[9] = 0 was written past the end (n = 8)"},
		{"past the end is found before a missing element", where, func(g [3][]int32) { g[0][0], g[2][8] = -1, 4 }, "check: sm[8] = 4 was written past the end"},
		{"a missing element before a wrong value", where, func(g [3][]int32) { g[0][1], g[1][5] = 9, -1 }, "check: thread[5] was never written"},
		{"which_warp's record, not where_am_i's", warps, func([3][]int32) {}, "check: warp[4] = 1, want 0 (thread 0 of block 1)"},
	}
	for _, tt := range tests {
		got := good()
		tt.mangle(got)
		sm, err := tt.rec.check(got, n, threads)
		switch {
		case tt.wantErr == "" && (err != nil || len(sm) != n || sm[4] != got[2][4]):
			t.Errorf("%s: check = %v, %v; want each thread's SM", tt.desc, sm, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: check = %v, want %q", tt.desc, err, tt.wantErr)
		}
	}
}

// TestPlantedVerdicts runs each planted kernel's mistake as Go on the
// CPU, at the problem's check sizes in blocks of 128, through the
// problem's check: the first size that fails must fail with the Want the
// kernel was planted with, which a GPU then confirms.
func TestPlantedVerdicts(t *testing.T) {
	const threads = 128
	type kernel struct {
		index      func(b, t int) int
		guardAfter bool // the guard comes after the writes
		warp, lane func(i, t int) int32
	}
	solution := kernel{
		index: func(b, t int) int { return b*threads + t },
		warp:  func(i, t int) int32 { return int32(t / 32) },
		lane:  func(i, t int) int32 { return int32(t % 32) },
	}
	planted := map[string]func(k *kernel){
		"solution.cu":              func(*kernel) {},
		"blockdim_for_blockidx.cu": func(k *kernel) { k.index = func(b, t int) int { return threads*threads + t } },
		"index_in_block.cu":        func(k *kernel) { k.index = func(b, t int) int { return t } },
		"guard_after_writes.cu":    func(k *kernel) { k.guardAfter = true },
		"warp_of_grid.cu":          func(k *kernel) { k.warp = func(i, t int) int32 { return int32(i / 32) } },
		"warp_lane_swapped.cu": func(k *kernel) {
			k.warp, k.lane = func(i, t int) int32 { return int32(t % 32) }, func(i, t int) int32 { return int32(t / 32) }
		},
	}
	l, err := lessons.Find("hello-gpu")
	if err != nil {
		t.Fatal(err)
	}
	if len(planted) != len(l.Planted) {
		t.Fatalf("%d planted kernels simulated, %d registered", len(planted), len(l.Planted))
	}
	for _, pk := range l.Planted {
		k := solution
		mistake, ok := planted[pk.File]
		if !ok {
			t.Errorf("%s is planted but not simulated", pk.File)
			continue
		}
		mistake(&k)
		var first error
		for _, s := range l.Problem.CheckSizes {
			n := s[0]
			var got [3][]int32
			for o := range got {
				got[o] = make([]int32, n+whereGuard)
				for i := range got[o] {
					got[o][i] = -1
				}
			}
			for b := range gpu.Blocks(n, threads) {
				for tx := range threads {
					i := k.index(b, tx)
					if i >= n && !k.guardAfter {
						continue
					}
					got[0][i], got[1][i], got[2][i] = k.warp(i, tx), k.lane(i, tx), int32(b%7)
				}
			}
			if _, err := records[1].check(got, n, threads); err != nil {
				first = err
				break
			}
		}
		switch {
		case pk.Want == "" && first != nil:
			t.Errorf("%s: %v, want it to pass", pk.File, first)
		case pk.Want != "" && (first == nil || !strings.Contains(first.Error(), pk.Want)):
			t.Errorf("%s: %v, want %q", pk.File, first, pk.Want)
		}
	}
}

func TestRecordOf(t *testing.T) {
	for _, tt := range []struct {
		impl    lessons.Impl
		want    string
		wantErr string
	}{
		{lessons.Impl{Name: "where_am_i"}, "where_am_i", ""},
		{lessons.Impl{Name: "which_warp_exercise", Like: "which_warp"}, "which_warp", ""},
		{lessons.Impl{Name: "nope"}, "", `no version "nope"`},
	} {
		r, err := recordOf(tt.impl)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("recordOf(%v) = %v, want %q", tt.impl, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || r.kernel != tt.want):
			t.Errorf("recordOf(%v) = %q, %v; want %q", tt.impl, r.kernel, err, tt.want)
		}
	}
}

func TestBlockMap(t *testing.T) {
	for _, tt := range []struct {
		sms  []int32
		most int
		want string
	}{
		{[]int32{0, 2, 4}, 32, "0→0 1→2 2→4"},
		{[]int32{7, 7, 9, 1}, 2, "0→7 1→7 … and 2 blocks more"},
	} {
		if got := blockMap(tt.sms, tt.most); got != tt.want {
			t.Errorf("blockMap(%v, %d) = %q, want %q", tt.sms, tt.most, got, tt.want)
		}
	}
}

// TestChaseOrder: the chase visits every line of a footprint once a lap,
// in an order fixed by the footprint.
func TestChaseOrder(t *testing.T) {
	for _, lines := range []int{1, 32, 1000} {
		order := chaseOrder(lines)
		seen := make([]bool, lines)
		for _, v := range order {
			if int(v) >= lines || seen[v] {
				t.Fatalf("chaseOrder(%d) = %v: not a permutation", lines, order)
			}
			seen[v] = true
		}
		if again := chaseOrder(lines); !slices.Equal(again, order) {
			t.Errorf("chaseOrder(%d) differs between calls", lines)
		}
	}
	if o := chaseOrder(1000); slices.IsSorted(o) {
		t.Errorf("chaseOrder(1000) is in address order, which a prefetcher could follow")
	}
}

func TestChaseFootprints(t *testing.T) {
	fs := chaseFootprints()
	if fs[0] != 4<<10 || fs[len(fs)-1] != 512<<20 || len(fs) != 35 {
		t.Errorf("chaseFootprints = %d points from %d to %d, want 35 from 4 KiB to 512 MiB", len(fs), fs[0], fs[len(fs)-1])
	}
	for i, b := range fs {
		if b%chaseLine != 0 || i > 0 && b <= fs[i-1] {
			t.Errorf("footprint %d, %d B: want whole lines, growing", i, b)
		}
	}
}

func TestChaseWarm(t *testing.T) {
	const l2 = 50 << 20
	for _, tt := range []struct{ footprint, want int }{
		{4 << 10, 32},
		{64 << 20, 64 << 20 / chaseLine},
		{100 << 20, 100 << 20 / chaseLine},
		{128 << 20, 0},
	} {
		if got := chaseWarm(tt.footprint, l2); got != tt.want {
			t.Errorf("chaseWarm(%d, 50 MiB) = %d, want %d", tt.footprint, got, tt.want)
		}
	}
}

func TestBytesLabel(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{4, "4 B"}, {4096, "4 KiB"}, {1 << 20, "1 MiB"}, {1<<20 + 12, "1048588 B"}} {
		if got := bytesLabel(lessons.Size{tt.n}); got != tt.want {
			t.Errorf("bytesLabel(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestShowChase: the chase's results are shown as a row a footprint, in
// ns and cycles, and drawn.
func TestShowChase(t *testing.T) {
	l, err := lessons.Find("hello-gpu")
	if err != nil {
		t.Fatal(err)
	}
	var rs []lessons.Result
	for _, p := range []struct {
		bytes         int
		ns, min, max  float64 // per load
		cyclesPerLoad float64
	}{{4 << 10, 20, 19.5, 21, 40}, {64 << 20, 600, 590, 610, 1200}} {
		d, _ := json.Marshal(chaseDetail{Loads: chaseSteps, CyclesPerLoad: p.cyclesPerLoad, L2Bytes: 50 << 20})
		rs = append(rs, lessons.Result{Step: "Memory latency", Kind: "bench", Variant: "pointer chase", Size: bytesLabel(lessons.Size{p.bytes}),
			Dims: []int{p.bytes}, Unit: "ns per load", Throughput: p.ns, Reps: 3, Detail: string(d), GPU: "GPU X", Date: "2026-11-28", Mode: "replayed",
			MedianMs: p.ns * chaseSteps / 1e6, MinMs: p.min * chaseSteps / 1e6, MaxMs: p.max * chaseSteps / 1e6})
	}
	var out bytes.Buffer
	if err := showChase(lessontest.ReplayEnv(t, &out), l, "Memory latency", rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4 KiB", "20.0", "19.5–21.0", "40", "64 MiB", "600.0", "590.0–610.0", "1200",
		"50 MiB on the GPU X", "Time per dependent load, one thread, GPU X", "figure:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("showChase's output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestShowWhere: a recorded run of where_am_i shows its block→SM map; a
// failed one is an error.
func TestShowWhere(t *testing.T) {
	d, _ := json.Marshal(whereMap{SMs: []int32{0, 2, 2}, SMCount: 132})
	r := lessons.Result{Step: "Who runs where", Kind: "bench", Variant: "where_am_i", Size: "3×128 threads", Dims: []int{300}, Block: 128, Passed: true, Detail: string(d)}
	var out bytes.Buffer
	if err := showWhere(lessontest.ReplayEnv(t, &out), r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"block→SM: 0→0 1→2 2→2", "every one of 300 threads", "3 blocks ran on 2 different SMs of 132"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("showWhere's output lacks %q:\n%s", want, out.String())
		}
	}
	r.Passed, r.Detail = false, "check: block[5] = 0, want 1"
	if err := showWhere(lessontest.ReplayEnv(t, &out), r); err == nil || !strings.Contains(err.Error(), "block[5]") {
		t.Errorf("showWhere of a failed run = %v, want its check's error", err)
	}
}
