package sanitizer

import (
	"embed"
	"strings"
	"testing"

	"cudarepl/gpu"
	_ "cudarepl/gpu/remote" // the Transport $CUDAREPL_REMOTE names, as package worker registers it in a program
)

// sanitizerLogs are reports compute-sanitizer 2025.3 wrote on an H100,
// embedded so that the test binary runs from any folder.
//
//go:embed testdata
var sanitizerLogs embed.FS

func TestParseSanitizerLog(t *testing.T) {
	tests := []struct {
		tool, file string
		want       []string
	}{
		{"memcheck", "memcheck.log", []string{"oob: Invalid __global__ write of size 4 bytes (thread (232,0,0), block (3,0,0), address 0x7f43d0800fa0): 1 bytes after the nearest allocation at 0x7f43d0800000 of size 4,000 bytes; 2 in all"}},
		{"racecheck", "racecheck-analysis.log", []string{"race: Race reported between Write access and Read access: at race+0xa0 and race+0xb0; 2048 in all"}},
		{"racecheck", "racecheck-hazard.log", []string{
			"matmul_exercise: potential RAW hazard on shared memory (block (0,0,0), address 0x1480): write by thread (0,1,0) at matmul_exercise+0x1f0, read by thread (0,0,0) at matmul_exercise+0x250",
			"race: potential RAW hazard on shared memory between threads of one warp (a warning) (block (0,0,0), address 0x404): write by thread (1,0,0) at race+0xa0, read by thread (0,0,0) at race+0xb0; 2 in all",
		}},
		{"synccheck", "synccheck.log", []string{"badsync: Barrier error detected. Divergent thread(s) in warp. (thread (0,0,0), block (0,0,0)); 2 in all"}},
		{"initcheck", "initcheck.log", []string{"uninit: Uninitialized __global__ memory read of size 4 bytes (thread (0,0,0), block (0,0,0), address 0x7f8a82801000); 2 in all"}},
		{"memcheck", "", nil},
	}
	for _, tt := range tests {
		var log []byte
		if tt.file != "" {
			var err error
			if log, err = sanitizerLogs.ReadFile("testdata/" + tt.file); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for _, f := range mergeFindings(parseSanitizerLog(tt.tool, string(log))) {
			got = append(got, f.String())
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: parse = %q\nwant %q", tt.file, got, tt.want)
		}
	}
}

func TestWrapperArgs(t *testing.T) {
	w, err := wrapper("/cuda/bin/compute-sanitizer", "racecheck")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(w.Argv, " ")
	for _, want := range []string{"/cuda/bin/compute-sanitizer --tool racecheck", "--log-file " + gpu.LogDir + "/worker.%p.log", "--racecheck-report hazard"} {
		if !strings.Contains(got, want) {
			t.Errorf("sanitizer command %q lacks %q", got, want)
		}
	}
	if w.Name != "compute-sanitizer racecheck" || w.Slowdown < 10 {
		t.Errorf("wrapper %q, slowdown %d", w.Name, w.Slowdown)
	}
	if _, err := wrapper("x", "leakcheck"); err == nil || !strings.Contains(err.Error(), "memcheck, racecheck, synccheck, initcheck") {
		t.Errorf("an unknown tool: %v", err)
	}
}

// TestWrapperOnARemoteHost: with the worker on a GPU host, the host finds
// compute-sanitizer, and this machine need not have it.
func TestWrapperOnARemoteHost(t *testing.T) {
	t.Setenv("CUDAREPL_HIDE", "sanitizer")
	t.Setenv("CUDAREPL_WORKER_CMD", "ssh gpu1 cudarepl worker")
	w, err := Wrapper("memcheck")
	if err != nil || w.Argv[0] != "compute-sanitizer" {
		t.Errorf("Wrapper on a remote host = %+v, %v; want compute-sanitizer, for the host to find", w, err)
	}
}
