// Command testsum reads "go test -json" on its standard input and writes
// what "go test" would (each package's result, and the output of every
// test that failed), then one line for each cause that tests were skipped
// for (what is missing, and how to get it), and last the totals:
// "tests: 612 passed, 0 failed, 34 skipped". So a run on a machine
// without NVRTC, Jupyter or a GPU says what it left out and what to
// install, once. With -v it lists the tests skipped under each cause. It
// exits 1 when a test or a build failed, or when no test ran at all.
//
//	go test -json ./... | go run ./scripts/testsum
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
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
	passed, failed int
	ran            bool
	skipped        map[string][]string // reason → "package TestName"
	failedTests    map[string]int      // package → its tests that failed
}

func main() {
	verbose := flag.Bool("v", false, "list the tests skipped under each cause")
	flag.Parse()
	s, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsum: %v\n", err)
		os.Exit(2)
	}
	s.writeEnd(os.Stdout, *verbose)
	switch {
	case s.failed > 0:
		os.Exit(1)
	case !s.ran:
		fmt.Println("testsum: no test ran")
		os.Exit(1)
	}
}

// skipLine is the "file_test.go:42: reason" line t.Skip writes.
var skipLine = regexp.MustCompile(`^\s+\w+\.go:\d+: (.*)$`)

// summarize copies the run's package lines and failed tests' output to w
// as they come, and counts and collects the rest.
func summarize(r io.Reader, w io.Writer) (*summary, error) {
	s := &summary{skipped: map[string][]string{}, failedTests: map[string]int{}}
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
		case e.Action == "pass" && e.Test != "":
			s.ran = true
			s.passed++
			delete(pending, key)
		case e.Action == "fail" && e.Test != "":
			s.failed++
			s.failedTests[e.Package]++
			fmt.Fprint(w, strings.Join(pending[key], ""))
			delete(pending, key)
		case e.Action == "fail" && s.failedTests[e.Package] == 0:
			s.failed++ // a package that failed with no test failing: its build, TestMain, a time-out
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

// writeEnd writes, after a blank line, one line for each cause of skips,
// with the tests under it where verbose is set, and then the totals.
func (s *summary) writeEnd(w io.Writer, verbose bool) {
	n := 0
	for _, ts := range s.skipped {
		n += len(ts)
	}
	fmt.Fprintln(w)
	if n > 0 {
		groups := byCause(s.skipped)
		fmt.Fprintf(w, "skipped, for %s:\n", count(len(groups), "cause"))
		for _, g := range groups {
			fmt.Fprintf(w, "- %s: %s\n", g.where(), g.cause)
			if verbose {
				for _, t := range g.tests {
					fmt.Fprintf(w, "    %s\n", t)
				}
			}
		}
	}
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, n)
}

// group is the tests skipped for one cause.
type group struct {
	cause string
	tests []string // "package TestName", sorted
}

// where says which test a group holds, or how many and where.
func (g group) where() string {
	if len(g.tests) == 1 {
		return g.tests[0]
	}
	var pkgs []string
	for _, t := range g.tests {
		p, _, _ := strings.Cut(t, " ")
		if !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 1 {
		return count(len(g.tests), "test") + " in " + pkgs[0]
	}
	return count(len(g.tests), "test") + " in " + count(len(pkgs), "package")
}

// byCause groups skip reasons by the cause they give, most tests first.
// A reason is what a test said ("11 planted kernels need NVRTC to
// compile: gpu: NVRTC not found; install …"). What follows a ": " in it
// is most often an error's text, and that error its cause: the cause is
// the part after a ": " that the most other reasons end with too, the
// longest of those, of four words or more, written without the name of
// the package that said it ("NVRTC not found; install …"); or the whole
// reason where no other shares its end.
func byCause(skipped map[string][]string) []group {
	reasons := make([]string, 0, len(skipped))
	for r := range skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	at := map[string]int{} // cause → its group
	var groups []group
	for _, r := range reasons {
		cause, most := r, 0
		for _, c := range tails(r) { // longest first: the longest of those most share wins
			if len(strings.Fields(c)) < 4 || strings.Count(c, ")") > strings.Count(c, "(") {
				continue // a few words ("install it"), or the end of a parenthesis
			}
			if n := sharers(c, r, reasons); n > most {
				cause, most = c, n
			}
		}
		cause = pkgPrefix.ReplaceAllString(cause, "")
		i, ok := at[cause]
		if !ok {
			i = len(groups)
			at[cause] = i
			groups = append(groups, group{cause: cause})
		}
		groups[i].tests = append(groups[i].tests, skipped[r]...)
	}
	for i := range groups {
		sort.Strings(groups[i].tests)
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].tests) > len(groups[j].tests) })
	return groups
}

// pkgPrefix is the name of a Go package that an error starts with.
var pkgPrefix = regexp.MustCompile(`^[a-z][a-z0-9]*: `)

// tails are the parts of r after each ": ", longest first.
func tails(r string) []string {
	var out []string
	for i := strings.Index(r, ": "); i >= 0; {
		out = append(out, r[i+2:])
		j := strings.Index(r[i+2:], ": ")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return out
}

// sharers counts the reasons other than r that end with tail, after a
// ": " or whole.
func sharers(tail, r string, reasons []string) int {
	n := 0
	for _, o := range reasons {
		if o != r && (o == tail || strings.HasSuffix(o, ": "+tail)) {
			n++
		}
	}
	return n
}

// count writes n and noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
