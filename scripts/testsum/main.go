// Command testsum reads "go test -json" on its standard input and writes
// what "go test" would (each package's result, and the output of every
// test that failed), then lists the tests that were skipped, grouped by the
// reason each gave, so that a run on a machine without NVRTC, Jupyter or a
// GPU says what it left out and what to install. It exits 1 when a test or
// a build failed, or when no test ran at all.
//
//	go test -json ./... | go run ./scripts/testsum
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of "go test -json" (see "go doc test2json").
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// summary is what a run came to.
type summary struct {
	failed  bool
	ran     bool
	skipped map[string][]string // reason → "package TestName"
}

func main() {
	s, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsum: %v\n", err)
		os.Exit(2)
	}
	s.writeSkipped(os.Stdout)
	switch {
	case s.failed:
		os.Exit(1)
	case !s.ran:
		fmt.Println("testsum: no test ran")
		os.Exit(1)
	}
}

// skipLine is the "file_test.go:42: reason" line t.Skip writes.
var skipLine = regexp.MustCompile(`^\s+\w+\.go:\d+: (.*)$`)

// summarize copies the run's package lines and failed tests' output to w
// as they come, and collects the skips.
func summarize(r io.Reader, w io.Writer) (*summary, error) {
	s := &summary{skipped: map[string][]string{}}
	pending := map[string][]string{} // package + test → its output so far
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // not an event: a build error, say
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "output" && e.Test == "" && e.Output != "PASS\n":
			fmt.Fprint(w, e.Output) // "ok  pkg  0.1s", as go test prints it
		case e.Action == "output" && e.Test != "":
			pending[key] = append(pending[key], e.Output)
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			s.failed = true
		case e.Action == "pass" && e.Test != "":
			s.ran = true
			delete(pending, key)
		case e.Action == "fail":
			s.failed = true
			if e.Test != "" {
				fmt.Fprint(w, strings.Join(pending[key], ""))
				delete(pending, key)
			}
		case e.Action == "skip" && e.Test != "":
			reason := "no reason given"
			for _, o := range pending[key] {
				if m := skipLine.FindStringSubmatch(strings.TrimRight(o, "\n")); m != nil {
					reason = m[1]
				}
			}
			s.skipped[reason] = append(s.skipped[reason], e.Package+" "+e.Test)
			delete(pending, key)
		}
	}
	return s, sc.Err()
}

// writeSkipped lists the skipped tests under each reason.
func (s *summary) writeSkipped(w io.Writer) {
	if len(s.skipped) == 0 {
		return
	}
	var reasons []string
	n := 0
	for r, ts := range s.skipped {
		reasons = append(reasons, r)
		n += len(ts)
	}
	sort.Strings(reasons)
	fmt.Fprintf(w, "\n%d tests skipped, and why:\n", n)
	for _, r := range reasons {
		fmt.Fprintf(w, "- %s\n", r)
		for _, t := range s.skipped[r] {
			fmt.Fprintf(w, "    %s\n", t)
		}
	}
}
