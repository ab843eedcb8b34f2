package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	const run = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:12: needs NVRTC: gpu: NVRTC not found; install it\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- PASS: TestB (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`
	var out bytes.Buffer
	s, err := summarize(strings.NewReader(run), &out)
	if err != nil {
		t.Fatal(err)
	}
	s.writeSkipped(&out)
	got := out.String()
	for _, want := range []string{"c_test.go:3: got 1, want 2", "FAIL\tp\t0.01s", "1 tests skipped, and why:\n- needs NVRTC: gpu: NVRTC not found; install it\n    p TestA\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "--- PASS") {
		t.Errorf("a passing test's output was copied:\n%s", got)
	}
	if !s.failed || !s.ran {
		t.Errorf("failed = %v, ran = %v; want both", s.failed, s.ran)
	}
}
