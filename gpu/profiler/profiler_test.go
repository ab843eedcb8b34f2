package profiler

import (
	"os"
	"strings"
	"testing"

	"cudarepl/gpu"
	_ "cudarepl/gpu/remote" // the Transport $CUDAREPL_REMOTE names, as package worker registers it in a program
)

// TestParseH100 reads a log ncu 2025 wrote on an H100 for a program that
// launched the marker, vadd, the marker again, then strided and vadd.
func TestParseH100(t *testing.T) {
	b, err := os.ReadFile("testdata/h100.log")
	if err != nil {
		t.Fatal(err)
	}
	sets, err := Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var names [][]string
	for _, s := range sets {
		var n []string
		for _, k := range s {
			n = append(n, k.Name)
		}
		names = append(names, n)
	}
	if got := strings.Join(names[0], ",") + "|" + strings.Join(names[1], ","); len(sets) != 2 || got != "vadd|strided,vadd" {
		t.Fatalf("kernels by mark = %q, want vadd|strided,vadd", names)
	}
	vadd := sets[0][0]
	for _, c := range []struct {
		metric string
		want   float64
	}{
		{Duration, 18304},
		{DRAMRead, 33559552}, // 2²² floats of a and of b: 33,554,432 bytes, and a few more
		{Registers, 16},
	} {
		if got, ok := vadd.Get(c.metric); !ok || got != c.want {
			t.Errorf("vadd %s = %v (%v), want %v", c.metric, got, ok, c.want)
		}
	}
	if vadd.Grid != "(16384, 1, 1)" || vadd.Block != "(256, 1, 1)" {
		t.Errorf("vadd grid %s block %s", vadd.Grid, vadd.Block)
	}
	for _, name := range []string{"device__attribute_max_threads_per_block", "dram__bytes_read.max", "launch__uses_cdp"} {
		if _, ok := vadd.Get(name); ok {
			t.Errorf("%s was kept: only the counters asked for are", name)
		}
	}
	if len(vadd.Metrics) < 25 {
		t.Errorf("vadd has %d counters, want the %d asked for and the stall reasons", len(vadd.Metrics), len(named()))
	}
	if v, _ := vadd.Get(StallPrefix + "long_scoreboard" + StallSuffix); v < 10 {
		t.Errorf("vadd's warps mostly wait on memory: long scoreboard %v", v)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ log, want string }{
		{"", "profiled no kernel"},
		{"==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n", "ERR_NVGPUCTRPERM"},
		{`"ID","Kernel Name","Grid Size","Block Size"` + "\n" + `"","","",""` + "\n" + `"0","vadd(int)","(1, 1, 1)","(1, 1, 1)"`, "before any marker"},
		{`"ID","Kernel Name","Grid Size"` + "\n", `no "Block Size" column`},
	} {
		_, err := Parse(c.log)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.40q) = %v, want an error with %q", c.log, err, c.want)
		}
	}
}

func TestBaseName(t *testing.T) {
	for in, want := range map[string]string{
		"vadd(const float *, const float *, float *, int)": "vadd",
		"void flash_fwd<128, true>(Params)":                "flash_fwd<128, true>",
		"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n":           "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n",
		gpu.ProfileMarker:                                  gpu.ProfileMarker,
	} {
		if got := baseName(in); got != want {
			t.Errorf("baseName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWrapperArgs(t *testing.T) {
	w := wrapper("/usr/local/cuda/bin/ncu")
	args := strings.Join(w.Argv, " ")
	for _, want := range []string{"--profile-from-start off", "--clock-control base", "--csv", "--page raw", Duration, StallPrefix, gpu.LogStart} {
		if !strings.Contains(args, want) {
			t.Errorf("ncu's arguments lack %q: %s", want, args)
		}
	}
}

// TestMerge: a worker started again after a fault writes a log of its
// own; the kernels of both come back, grouped by their marks.
func TestMerge(t *testing.T) {
	b, err := os.ReadFile("testdata/h100.log")
	if err != nil {
		t.Fatal(err)
	}
	second := `"ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum"` + "\n" +
		`"","","","","ns"` + "\n" +
		`"0","cudarepl_profile_mark","(3, 1, 1)","(1, 1, 1)","1,000"` + "\n" +
		`"1","copy(float*)","(8, 1, 1)","(256, 1, 1)","2,000"` + "\n"
	sets, err := merge([]string{string(b), second})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 3 || len(sets[0]) != 1 || len(sets[1]) != 2 || len(sets[2]) != 1 || sets[2][0].Name != "copy" {
		t.Fatalf("merged sets %v", sets)
	}
	if d, _ := sets[2][0].Get(Duration); d != 2000 {
		t.Errorf("the second log's kernel took %v ns, want 2000", d)
	}
	if _, err := merge(nil); err == nil {
		t.Errorf("no log merged without an error")
	}
	if _, err := merge([]string{"==ERROR== ERR_NVGPUCTRPERM"}); err == nil || !strings.Contains(err.Error(), "ERR_NVGPUCTRPERM") {
		t.Errorf("a log of errors: %v", err)
	}
}

// TestWrapperOnARemoteHost: with the worker on a GPU host, the host finds
// ncu, and this machine need not have it.
func TestWrapperOnARemoteHost(t *testing.T) {
	t.Setenv("CUDAREPL_HIDE", "ncu")
	t.Setenv("CUDAREPL_REMOTE", "gpu1")
	w, err := Wrapper()
	if err != nil || w.Argv[0] != "ncu" {
		t.Errorf("Wrapper on a remote host = %+v, %v; want ncu, for the host to find", w, err)
	}
}
