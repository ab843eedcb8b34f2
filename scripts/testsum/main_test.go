package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// run is go test -json's output for tests: "pass", "fail", "skip REASON",
// each named TestN in package p, then the package's own result.
func run(tests ...string) string {
	var b strings.Builder
	ev := func(action, test, output string) {
		fmt.Fprintf(&b, `{"Action":%q,"Package":"p","Test":%q,"Output":%q}`+"\n", action, test, output)
	}
	failed := false
	for i, t := range tests {
		name := fmt.Sprintf("Test%d", i)
		ev("run", name, "")
		ev("output", name, "=== RUN   "+name+"\n")
		action, reason, _ := strings.Cut(t, " ")
		switch action {
		case "skip":
			ev("output", name, "    x_test.go:12: "+reason+"\n")
		case "fail":
			ev("output", name, "    x_test.go:3: got 1, want 2\n")
			failed = true
		}
		ev("output", name, "--- "+strings.ToUpper(action)+": "+name+" (0.00s)\n")
		ev(action, name, "")
	}
	if failed {
		fmt.Fprintf(&b, `{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`+"\n"+`{"Action":"fail","Package":"p"}`+"\n")
	} else {
		fmt.Fprintf(&b, `{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}`+"\n"+`{"Action":"pass","Package":"p"}`+"\n")
	}
	return b.String()
}

const noNVRTC = "gpu: NVRTC not found (libnvrtc.so.13, libnvrtc.so.12); install the CUDA toolkit (or Debian's libnvrtc11.2) or set CUDA_PATH"

func TestSummary(t *testing.T) {
	for _, tt := range []struct {
		desc    string
		run     string
		want    string // the end of the output
		failed  bool
		verbose bool
	}{
		{"one cause however each test words it", run("pass",
			"skip 11 planted kernels need NVRTC to compile: "+noNVRTC,
			"skip 14 planted kernels need NVRTC to compile: "+noNVRTC,
			"skip 1 planted kernel needs NVRTC to compile: "+noNVRTC,
			"skip needs NVRTC (Debian: libnvrtc11.2 from non-free): "+noNVRTC,
			"skip the rest needs NVRTC (Debian: libnvrtc11.2 from non-free): "+noNVRTC,
			`skip needs NVRTC 11.8, with which the golden transcript was recorded; here: "", `+noNVRTC,
			"skip jupyter not found: install Debian's jupyter-nbconvert and python3-nbclient to execute the notebooks"),
			"ok  \tp\t0.01s\n\nskipped, for 2 causes:\n" +
				"- 6 tests in p: NVRTC not found (libnvrtc.so.13, libnvrtc.so.12); install the CUDA toolkit (or Debian's libnvrtc11.2) or set CUDA_PATH\n" +
				"- p Test7: jupyter not found: install Debian's jupyter-nbconvert and python3-nbclient to execute the notebooks\n" +
				"tests: 1 passed, 0 failed, 7 skipped\n", false, false},
		{"causes that share only a remedy stay apart", run(
			"skip jupyter not found: install it", "skip nbformat not found: install it"),
			"skipped, for 2 causes:\n- p Test0: jupyter not found: install it\n- p Test1: nbformat not found: install it\ntests: 0 passed, 0 failed, 2 skipped\n", false, false},
		{"verbose lists the tests", run("skip needs a GPU", "skip needs a GPU", "pass"),
			"skipped, for 1 cause:\n- 2 tests in p: needs a GPU\n    p Test0\n    p Test1\ntests: 1 passed, 0 failed, 2 skipped\n", false, true},
		{"a failure shows its output", run("pass", "fail"),
			"    x_test.go:3: got 1, want 2\n--- FAIL: Test1 (0.00s)\nFAIL\tp\t0.01s\n\ntests: 1 passed, 1 failed, 0 skipped\n", true, false},
		{"a package that did not build counts as failed", `{"Action":"build-output","ImportPath":"p","Output":"x.go:1: syntax error\n"}
{"Action":"build-fail","ImportPath":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p"}
`, "x.go:1: syntax error\nFAIL\tp [build failed]\n\ntests: 0 passed, 1 failed, 0 skipped\n", true, false},
	} {
		var out bytes.Buffer
		s, err := summarize(strings.NewReader(tt.run), &out)
		if err != nil {
			t.Fatal(err)
		}
		s.writeEnd(&out, tt.verbose)
		if got := out.String(); !strings.HasSuffix(got, tt.want) {
			t.Errorf("%s: output ends\n%s\nwant it to end\n%s", tt.desc, got, tt.want)
		}
		if got := out.String(); strings.Contains(got, "--- PASS") {
			t.Errorf("%s: a passing test's output was copied:\n%s", tt.desc, got)
		}
		if got := s.failed > 0; got != tt.failed {
			t.Errorf("%s: failed = %v; want %v", tt.desc, got, tt.failed)
		}
	}
}
