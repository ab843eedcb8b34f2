package batchedgemm

import (
	"bytes"
	"strings"
	"testing"

	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestFloat4Rows(t *testing.T) {
	if err := float4Rows(lessons.Size{40, 256, 256, 256}); err != nil {
		t.Errorf("256³: %v", err)
	}
	if err := float4Rows(lessons.Size{3, 17, 33, 65}); err == nil || !strings.Contains(err.Error(), "got K=65 N=33") {
		t.Errorf("17×33×65: %v", err)
	}
}

// TestCheckSizesShowStrideMistakes: at every check size no side is a
// multiple of 16, M < N < K, so a kernel moving a matrix by another's size
// reads other numbers but stays inside the batch, and the batch covers the
// grid's x extent, so one taking the product from blockIdx.x stays inside
// it too.
func TestCheckSizesShowStrideMistakes(t *testing.T) {
	for _, s := range problem().CheckSizes {
		batch, m, n, k := s[0], s[1], s[2], s[3]
		if m%16 == 0 || n%16 == 0 || k%16 == 0 {
			t.Errorf("%v: a side is a multiple of 16", s)
		}
		if !(m < n && n < k) {
			t.Errorf("%v: want M < N < K", s)
		}
		if x := gpu.Blocks(n, 32); x > batch {
			t.Errorf("%v: the grid's x extent %d passes the batch of %d", s, x, batch)
		}
	}
}

func TestHostCalls(t *testing.T) {
	for _, tc := range []struct {
		impl string
		want int
	}{
		{cublasEach, 40}, {cublasGraph, 1}, {cublasBatched, 1}, {cublasTuned, 1},
		{kernelEach, 40}, {kernelStreams, 40}, {kernelBatched, 1}, {kernelTMA, 1},
	} {
		if got := hostCalls(tc.impl, 40); got != tc.want {
			t.Errorf("hostCalls(%q, 40) = %d; want %d", tc.impl, got, tc.want)
		}
	}
}

func TestPerProduct(t *testing.T) {
	for _, tc := range []struct {
		impl string
		want int
	}{
		{kernelEach, 64}, {kernelBatched, 64}, {kernelTiled, 16}, {kernelAsync, 16}, {kernelTMA, 16},
	} {
		if got := perProduct(tc.impl); got != tc.want {
			t.Errorf("perProduct(%q) = %d; want %d", tc.impl, got, tc.want)
		}
	}
}

// TestOnStreams: the launches go in turn to streams 1 to n, which wait
// for the device's stream before and are waited for after.
func TestOnStreams(t *testing.T) {
	launches := []gpu.Op{gpu.Memset{Count: 1}, gpu.Memset{Count: 2}, gpu.Memset{Count: 3}}
	ops := onStreams(launches, 2)
	var got []string
	for _, op := range ops {
		got = append(got, op.Name())
	}
	want := []string{
		"record event 0", "wait for event 0 on stream 1", "wait for event 0 on stream 2",
		"memset on stream 1", "memset on stream 2", "memset on stream 1",
		"record event 1 on stream 1", "wait for event 1", "record event 2 on stream 2", "wait for event 2",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("onStreams = %q;\nwant %q", got, want)
	}
}

// TestLaunchTable: the table of the ways at a batch of 40 reads the
// sweep's results, replayed, and says what a call cost across the sweep.
func TestLaunchTable(t *testing.T) {
	var out bytes.Buffer
	l, _ := lessons.Find("batched-gemm")
	i, _ := l.StepNamed("One call or forty")
	if err := l.RunStep(lessontest.ReplayEnv(t, &out), i); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"× faster than 40 calls", "cuBLAS, one call each", "matmul_batched_v4", "µs a call", "40 in a row 534.3 µs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("launch table lacks %q:\n%s", want, out.String())
		}
	}
}

// result is a measured result of impl at a batch of 256³ products.
func result(impl string, batch int, us float64) lessons.Result {
	return lessons.Result{Variant: impl, Dims: []int{batch, 256, 256, 256}, MedianMs: us / 1e3, Throughput: 1 / us}
}

func TestLaunchRowsNotes(t *testing.T) {
	at := byBatch([]lessons.Result{
		result(kernelEach, 1, 14), result(kernelEach, 40, 520),
		result(cublasEach, 10, 120), result(cublasEach, 40, 600), result(cublasGraph, 40, 440),
		result(cublasBatched, 40, 40),
	})
	tbl, ok := launchRows(problem().Impls, at)
	if !ok {
		t.Fatal("no table from results that have the forty calls")
	}
	notes := strings.Join(tbl.Notes, "\n")
	for _, want := range []string{
		"600.0 µs made one by one, 440.0 µs replayed from a graph", "4.00 µs a call more one by one",
		"batches of 10 to 40: 12.0 to 15.0 µs a call",
		"14.0 µs launched alone; 40 in a row 520.0 µs, 13.00 µs a launch (40 × 14.0 would be 560.0)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if len(tbl.Rows) != 4 {
		t.Errorf("%d rows, want 4 (the ways measured at 40): %q", len(tbl.Rows), tbl.Rows)
	}
	for _, row := range tbl.Rows {
		if row[0] == cublasBatched && (row[4] != "15.0" || row[5] != "11.0") {
			t.Errorf("%s: × faster %s and %s, want 15.0 and 11.0", row[0], row[4], row[5])
		}
	}
	if _, ok := launchRows(problem().Impls, byBatch(nil)); ok {
		t.Error("a table without the forty calls")
	}
}

func TestWaveRows(t *testing.T) {
	occ := map[string]occupancy{kernelEach: {2, 132}, kernelAsync: {5, 132}}
	at := byBatch([]lessons.Result{result(kernelAsync, 40, 40.7), result(kernelAsync, 41, 41.0), result(kernelAsync, 42, 48.0)})
	tbl := waveRows(occ, at)
	if len(tbl.Rows) != 1 {
		t.Fatalf("%d rows, want v3's alone: %q", len(tbl.Rows), tbl.Rows)
	}
	want := []string{kernelAsync, "16", "5", "41.25", "40.7 (0.97)", "41.0 (0.99)", "48.0 (1.02)"}
	if got := tbl.Rows[0]; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("row = %q; want %q", got, want)
	}
	if note := strings.Join(tbl.Notes, "\n"); !strings.Contains(note, "64 blocks, 2 an SM, so a launch fills 0.24 of a wave and 4 launches at once 0.97") {
		t.Errorf("no note on matmul_v3's launches: %q", note)
	}
}

func TestMemoryOfABatch(t *testing.T) {
	one := lessons.MatmulMemory(4, 4)(lessons.Size{256, 256, 256})
	forty := problem().Memory(lessons.Size{40, 256, 256, 256})
	if forty.Device != 40*one.Device {
		t.Errorf("40 products take %d bytes, want 40 × %d", forty.Device, one.Device)
	}
}
