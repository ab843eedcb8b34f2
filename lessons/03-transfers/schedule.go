package transfers

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"cudarepl/gpu"
	"cudarepl/lessons"
)

// A schedule is the learner's pipeline, written in a small language: which
// stream each chunk's copies and kernel go on, and the events that order
// the streams. A line is one operation:
//
//	in C        copy chunk C of x to the device
//	work C      run work on chunk C
//	out C       copy chunk C of y back to the host
//	record E    record event E on the line's stream
//	wait E      make the line's stream wait for event E
//
// on the device's stream (0) unless it begins "on S:". "chunks N" says how
// many chunks x is cut into, and "for c in A..B {" … "}" repeats the lines
// between for c = A, A+1, …, B−1. C, E, S, A and B may be sums like
// 1 + c % 4 over the loops' names and chunks.
//
// "host pinned" (the default) or "host pageable" says where x and y live
// on the host. "buffers N" gives the device N buffers of one chunk each,
// in place of room for the whole of x and y; every in, work and out then
// names the buffer its chunk goes through: "in c @ c % 2".
type schedule struct {
	chunks   int
	buffers  int // device buffers of one chunk each; 0: each chunk has its own place
	pageable bool
	hostLine int // the line that said "host pageable"
	ops      []schedOp
}

// schedOp is one operation of an unrolled schedule.
type schedOp struct {
	kind   string // "in", "work", "out", "record" or "wait"
	arg    int    // the chunk, or the event
	buf    int    // the device buffer a chunk goes through, with buffers; else 0
	stream int
	line   int // where it was written
}

func (o schedOp) String() string {
	return fmt.Sprintf("%s %d on stream %d (line %d)", o.kind, o.arg, o.stream, o.line)
}

// The schedule's bounds: enough for any pipeline worth drawing, few enough
// that a runaway loop is refused rather than run.
const (
	maxChunks       = 1024
	maxSchedStreams = 8
	maxEvents       = 64
	maxSchedOps     = 20000
	maxRounds       = 100000
)

// schedules reads the learner's schedules, the lesson's exercise, and
// draws what one did.
var schedules = lessons.Plans[*schedule]{Read: readSchedule, Show: showSchedule}

// readSchedule reads a learner's schedule and checks its order.
func readSchedule(code string) (*schedule, error) {
	sc, err := parseSchedule(code)
	if err != nil {
		return nil, err
	}
	if err := sc.check(); err != nil {
		return nil, err
	}
	return sc, nil
}

// String says what the schedule does in one line.
func (s *schedule) String() string {
	var used []int
	for _, o := range s.ops {
		if doneTo[o.kind] != "" && !slices.Contains(used, o.stream) {
			used = append(used, o.stream)
		}
	}
	slices.Sort(used)
	var names []string
	for _, u := range used {
		names = append(names, strconv.Itoa(u))
	}
	through := ""
	if s.buffers > 0 {
		through = fmt.Sprintf(" through %d device buffers", s.buffers)
	}
	on := "streams"
	if len(names) == 1 {
		on = "stream"
	}
	return fmt.Sprintf("%d chunks copied and worked on%s, on %s %s; %d operations in all, events included",
		s.chunks, through, on, strings.Join(names, ", "), len(s.ops))
}

// parseSchedule reads and unrolls a schedule. Its errors name the line.
func parseSchedule(src string) (*schedule, error) {
	p := &schedParser{vars: map[string]int{}, chunks: -1, buffers: -1}
	lines := strings.Split(src, "\n")
	end, err := p.block(lines, 0, false)
	if err != nil {
		return nil, err
	}
	if end != len(lines) {
		return nil, lineErr(end+1, "a '}' that closes no 'for'")
	}
	if p.chunks < 0 {
		return nil, errors.New("the schedule never says how many chunks: start it with a line 'chunks N'")
	}
	return &schedule{chunks: p.chunks, buffers: max(0, p.buffers), pageable: p.host == "pageable", hostLine: p.hostLine, ops: p.ops}, nil
}

// schedParser unrolls a schedule as it reads it.
type schedParser struct {
	vars     map[string]int // the loops' names, as they are now
	chunks   int            // −1 until set
	buffers  int            // −1 until set
	host     string         // "pinned" or "pageable"; "" until set
	hostLine int
	ops      []schedOp
	rounds   int // every loop's rounds so far
}

func lineErr(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// block runs lines from i until a "}" (when inLoop) or the end, and
// returns the index of the "}" or len(lines).
func (p *schedParser) block(lines []string, i int, inLoop bool) (int, error) {
	for ; i < len(lines); i++ {
		line := bare(lines[i])
		n := i + 1
		switch {
		case line == "":
		case line == "}":
			return i, nil
		case strings.HasPrefix(line, "for ") || line == "for":
			end, err := p.loop(lines, i, line)
			if err != nil {
				return 0, err
			}
			i = end
		case strings.HasPrefix(line, "chunks ") || line == "chunks":
			if p.chunks >= 0 {
				return 0, lineErr(n, "chunks is set twice")
			}
			v, err := p.eval(n, strings.TrimPrefix(line, "chunks"))
			if err != nil {
				return 0, err
			}
			if v < 1 || v > maxChunks {
				return 0, lineErr(n, "chunks %d: from 1 to %d", v, maxChunks)
			}
			p.chunks = v
		case strings.HasPrefix(line, "buffers ") || line == "buffers":
			if err := p.setBuffers(n, strings.TrimPrefix(line, "buffers")); err != nil {
				return 0, err
			}
		case strings.HasPrefix(line, "host ") || line == "host":
			if err := p.setHost(n, strings.TrimSpace(strings.TrimPrefix(line, "host"))); err != nil {
				return 0, err
			}
		default:
			if err := p.op(n, line); err != nil {
				return 0, err
			}
		}
	}
	if inLoop {
		return 0, errors.New("a 'for' is never closed: end it with a line '}'")
	}
	return i, nil
}

// setBuffers reads "buffers N" at line n: N device buffers of one chunk
// each, no more than there are chunks.
func (p *schedParser) setBuffers(n int, arg string) error {
	switch {
	case p.buffers >= 0:
		return lineErr(n, "buffers is set twice")
	case p.chunks < 0:
		return lineErr(n, "buffers comes before the schedule says how many chunks: put 'chunks N' first")
	case len(p.ops) > 0:
		return lineErr(n, "buffers comes after the first operation: say it before any in, work, out, record or wait")
	}
	v, err := p.eval(n, arg)
	if err != nil {
		return err
	}
	if v < 1 || v > p.chunks {
		return lineErr(n, "buffers %d: from 1 to the %d chunks", v, p.chunks)
	}
	p.buffers = v
	return nil
}

// setHost reads "host pinned" or "host pageable" at line n.
func (p *schedParser) setHost(n int, where string) error {
	switch {
	case p.host != "":
		return lineErr(n, "host is set twice")
	case where != "pinned" && where != "pageable":
		return lineErr(n, "host %q: x and y live in 'host pinned' or 'host pageable' memory", where)
	}
	p.host, p.hostLine = where, n
	return nil
}

// loop runs "for NAME in A..B {" at lines[i] and returns the index of its
// "}".
func (p *schedParser) loop(lines []string, i int, line string) (int, error) {
	n := i + 1
	head, ok := strings.CutSuffix(line, "{")
	if !ok {
		return 0, lineErr(n, "a 'for' line ends with '{', as in 'for c in 0..chunks {'")
	}
	f := strings.Fields(head)
	if len(f) < 4 || f[0] != "for" || f[2] != "in" {
		return 0, lineErr(n, "write a loop as 'for c in 0..chunks {'")
	}
	name := f[1]
	if !isName(name) || isKeyword(name) {
		return 0, lineErr(n, "%q cannot name a loop's counter", name)
	}
	if _, taken := p.vars[name]; taken {
		return 0, lineErr(n, "%q is already the counter of an enclosing loop", name)
	}
	lo, hi, ok := strings.Cut(strings.Join(f[3:], " "), "..")
	if !ok {
		return 0, lineErr(n, "a loop's range is written A..B, as in 0..chunks")
	}
	a, err := p.eval(n, lo)
	if err != nil {
		return 0, err
	}
	b, err := p.eval(n, hi)
	if err != nil {
		return 0, err
	}
	if a >= b { // an empty loop: find its end without running it
		return skipBlock(lines, i+1)
	}
	if p.rounds += b - a; p.rounds > maxRounds {
		return 0, lineErr(n, "the loops run more than %d times in all", maxRounds)
	}
	var end int
	for v := a; v < b; v++ {
		p.vars[name] = v
		if end, err = p.block(lines, i+1, true); err != nil {
			return 0, err
		}
	}
	delete(p.vars, name)
	return end, nil
}

// bare is a schedule's line without its comment and surrounding space.
func bare(line string) string {
	line, _, _ = strings.Cut(line, "#")
	return strings.TrimSpace(line)
}

// skipBlock returns the index of the "}" closing the block from line i.
func skipBlock(lines []string, i int) (int, error) {
	depth := 0
	for ; i < len(lines); i++ {
		line := bare(lines[i])
		switch {
		case strings.HasSuffix(line, "{"):
			depth++
		case line == "}" && depth == 0:
			return i, nil
		case line == "}":
			depth--
		}
	}
	return 0, errors.New("a 'for' is never closed: end it with a line '}'")
}

// op reads "[on S:] KIND ARG [@ B]".
func (p *schedParser) op(n int, line string) error {
	stream := 0
	if rest, ok := strings.CutPrefix(line, "on "); ok {
		s, body, ok := strings.Cut(rest, ":")
		if !ok {
			return lineErr(n, "'on S' is followed by ':' and the operation, as in 'on 1: in c'")
		}
		v, err := p.eval(n, s)
		if err != nil {
			return err
		}
		if v < 0 || v > maxSchedStreams {
			return lineErr(n, "stream %d: streams are 0 (the device's) to %d", v, maxSchedStreams)
		}
		stream, line = v, strings.TrimSpace(body)
	}
	kind, arg, _ := strings.Cut(line, " ")
	switch kind {
	case "in", "work", "out", "record", "wait":
	default:
		return lineErr(n, "%q is not an operation: a line is in, work, out, record or wait, or 'on S:' and one of them", kind)
	}
	arg, bufArg, hasBuf := strings.Cut(arg, "@")
	if strings.TrimSpace(arg) == "" {
		return lineErr(n, "%s needs a number: which chunk or event", kind)
	}
	v, err := p.eval(n, arg)
	if err != nil {
		return err
	}
	buf := 0
	switch kind {
	case "record", "wait":
		if v < 0 || v >= maxEvents {
			return lineErr(n, "event %d: events are 0 to %d", v, maxEvents-1)
		}
		if hasBuf {
			return lineErr(n, "%s %d: '@ B' names the device buffer of a chunk's in, work or out; an event has none", kind, v)
		}
	default:
		if p.chunks < 0 {
			return lineErr(n, "%s %d comes before the schedule says how many chunks: put 'chunks N' first", kind, v)
		}
		if v < 0 || v >= p.chunks {
			return lineErr(n, "%s %d: the chunks are 0 to %d", kind, v, p.chunks-1)
		}
		if buf, err = p.buffer(n, kind, v, bufArg, hasBuf); err != nil {
			return err
		}
	}
	if len(p.ops) == maxSchedOps {
		return lineErr(n, "more than %d operations: the loops run too long", maxSchedOps)
	}
	p.ops = append(p.ops, schedOp{kind: kind, arg: v, buf: buf, stream: stream, line: n})
	return nil
}

// buffer reads the device buffer that chunk operation "kind c" at line n
// names after its '@' (arg; hasBuf false where it names none): one there
// is with 'buffers N', and none without.
func (p *schedParser) buffer(n int, kind string, c int, arg string, hasBuf bool) (int, error) {
	switch {
	case p.buffers < 0 && !hasBuf:
		return 0, nil
	case p.buffers < 0:
		return 0, lineErr(n, "%s %d names a device buffer, but the schedule has no 'buffers N' line: without one, every chunk has its own place on the device", kind, c)
	case !hasBuf:
		return 0, lineErr(n, "%s %d names no device buffer: with 'buffers %d', every in, work and out says which it goes through, as in '%s c @ c %% %d'", kind, c, p.buffers, kind, p.buffers)
	}
	b, err := p.eval(n, arg)
	if err != nil {
		return 0, err
	}
	if b < 0 || b >= p.buffers {
		return 0, lineErr(n, "%s %d @ %d: the buffers are 0 to %d", kind, c, b, p.buffers-1)
	}
	return b, nil
}

func isName(s string) bool {
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

func isKeyword(s string) bool {
	switch s {
	case "for", "in", "on", "chunks", "buffers", "host", "work", "out", "record", "wait":
		return true
	}
	return false
}

// eval works out an integer expression: numbers, the loops' names and
// chunks, + − * / % and parentheses.
func (p *schedParser) eval(line int, s string) (int, error) {
	e := &exprParser{src: strings.TrimSpace(s), p: p, line: line}
	if e.src == "" {
		return 0, lineErr(line, "a number is missing")
	}
	v, err := e.sum()
	if err != nil {
		return 0, err
	}
	e.space()
	if e.pos < len(e.src) {
		return 0, lineErr(line, "%q: unexpected %q", e.src, e.src[e.pos:])
	}
	return v, nil
}

type exprParser struct {
	src  string
	pos  int
	p    *schedParser
	line int
}

func (e *exprParser) space() {
	for e.pos < len(e.src) && (e.src[e.pos] == ' ' || e.src[e.pos] == '\t') {
		e.pos++
	}
}

func (e *exprParser) sum() (int, error) {
	v, err := e.product()
	for err == nil {
		e.space()
		if e.pos >= len(e.src) || (e.src[e.pos] != '+' && e.src[e.pos] != '-') {
			break
		}
		op := e.src[e.pos]
		e.pos++
		var w int
		if w, err = e.product(); err == nil {
			if op == '+' {
				v += w
			} else {
				v -= w
			}
		}
	}
	return v, err
}

func (e *exprParser) product() (int, error) {
	v, err := e.unary()
	for err == nil {
		e.space()
		if e.pos >= len(e.src) || !strings.ContainsRune("*/%", rune(e.src[e.pos])) {
			break
		}
		op := e.src[e.pos]
		e.pos++
		var w int
		if w, err = e.unary(); err != nil {
			break
		}
		switch {
		case op == '*':
			v *= w
		case w == 0:
			err = lineErr(e.line, "%q divides by zero", e.src)
		case op == '/':
			v /= w
		default:
			v %= w
		}
	}
	return v, err
}

func (e *exprParser) unary() (int, error) {
	e.space()
	if e.pos < len(e.src) && e.src[e.pos] == '-' {
		e.pos++
		v, err := e.unary()
		return -v, err
	}
	return e.atom()
}

func (e *exprParser) atom() (int, error) {
	e.space()
	if e.pos >= len(e.src) {
		return 0, lineErr(e.line, "%q ends where a number should be", e.src)
	}
	start := e.pos
	switch c := rune(e.src[e.pos]); {
	case c == '(':
		e.pos++
		v, err := e.sum()
		if err != nil {
			return 0, err
		}
		e.space()
		if e.pos >= len(e.src) || e.src[e.pos] != ')' {
			return 0, lineErr(e.line, "%q: a '(' is never closed", e.src)
		}
		e.pos++
		return v, nil
	case unicode.IsDigit(c):
		for e.pos < len(e.src) && unicode.IsDigit(rune(e.src[e.pos])) {
			e.pos++
		}
		v, err := strconv.Atoi(e.src[start:e.pos])
		if err != nil || v > 1<<20 {
			return 0, lineErr(e.line, "%s is too large a number here", e.src[start:e.pos])
		}
		return v, nil
	case c == '_' || unicode.IsLetter(c):
		for e.pos < len(e.src) && (e.src[e.pos] == '_' || unicode.IsLetter(rune(e.src[e.pos])) || unicode.IsDigit(rune(e.src[e.pos]))) {
			e.pos++
		}
		name := e.src[start:e.pos]
		if name == "chunks" {
			if e.p.chunks < 0 {
				return 0, lineErr(e.line, "chunks is used before it is set: put 'chunks N' first")
			}
			return e.p.chunks, nil
		}
		if v, ok := e.p.vars[name]; ok {
			return v, nil
		}
		return 0, lineErr(e.line, "unknown name %q: names are the loops' counters and chunks", name)
	}
	return 0, lineErr(e.line, "%q: unexpected %q", e.src, e.src[e.pos:])
}

// lay lays the schedule over n elements: chunk i covers the elements
// chunked would give it, and becomes chunk(kind, from, at, count), where
// at is where on the device its elements go: from, or with buffers the
// start of its buffer, buffer b covering elements b·size to (b+1)·size,
// which may pass n by less than a chunk. A chunk with no elements (more
// chunks than elements) is left out; streams and events are kept.
func (s *schedule) lay(n int, chunk func(kind string, from, at, count int) gpu.Op) []gpu.Op {
	size := (n + s.chunks - 1) / s.chunks
	var ops []gpu.Op
	for _, o := range s.ops {
		var op gpu.Op
		switch o.kind {
		case "record":
			op = gpu.Record{Event: o.arg}
		case "wait":
			op = gpu.WaitFor{Event: o.arg}
		default:
			from := o.arg * size
			count := min(size, n-from)
			if count <= 0 {
				continue
			}
			at := from
			if s.buffers > 0 {
				at = o.buf * size
			}
			op = chunk(o.kind, from, at, count)
		}
		if o.stream != 0 {
			op = gpu.OnStream{Stream: o.stream, Op: op}
		}
		ops = append(ops, op)
	}
	return ops
}

// what each chunk operation does to its chunk, for messages.
var doneTo = map[string]string{"in": "copied in", "work": "worked on", "out": "copied out"}

// clock is a vector clock over the streams: entry s counts the operations
// of stream s that are done before whatever holds the clock may start.
type clock [maxSchedStreams + 1]int

// stamped is a chunk operation with its place in the schedule and its clock.
type stamped struct {
	schedOp
	index int
	at    clock
}

// before reports whether a is done before b can start: b's clock has
// counted a on a's stream.
func (a stamped) before(b stamped) bool { return a.at[a.stream] <= b.at[a.stream] }

// check reports the first way the schedule can compute a wrong y, or read
// it before it is written, on a GPU that runs streams as concurrently as
// their events allow: every chunk copied in, worked on and copied out once,
// each after the one before, through one device buffer; two chunks that
// share a buffer one after the other; every stream's work after what the
// device's stream did before the schedule (where the timer starts); y
// copied out before the device's stream, which is waited for, ends; no
// event recorded again before what its last record stood for is waited
// for. It also refuses a schedule that cannot overlap: one in which every
// operation waits for the one before (correct, but the serial pipeline
// cut into pieces), and one whose copies go through pageable memory.
func (s *schedule) check() error {
	var cur [maxSchedStreams + 1]clock
	cur[0][0] = 1 // what the device's stream did before the schedule
	events := map[int]recorded{}
	ops := map[string]map[int]stamped{"in": {}, "work": {}, "out": {}}
	var all []stamped
	for i, o := range s.ops {
		c := &cur[o.stream]
		switch o.kind {
		case "record":
			if prev, ok := events[o.arg]; ok && !prev.waited && !covers(*c, prev.at) {
				return lineErr(o.line, "record %d on stream %d replaces event %d's record on stream %d (line %d) before anything waited for it: "+
					"a wait sees only an event's last record, so nothing waits for what stream %d did up to line %d. Give each stream its own event",
					o.arg, o.stream, o.arg, prev.stream, prev.line, prev.stream, prev.line)
			}
			events[o.arg] = recorded{schedOp: o, at: *c}
			continue
		case "wait":
			e, ok := events[o.arg]
			if !ok {
				return lineErr(o.line, "wait %d on stream %d comes before any 'record %d': it waits for nothing", o.arg, o.stream, o.arg)
			}
			for k := range c {
				c[k] = max(c[k], e.at[k])
			}
			e.waited = true
			events[o.arg] = e
			continue
		}
		c[o.stream]++
		st := stamped{schedOp: o, index: i, at: *c}
		if prev, dup := ops[o.kind][o.arg]; dup {
			return lineErr(o.line, "chunk %d is %s twice (lines %d and %d): each chunk is copied in, worked on and copied out once", o.arg, doneTo[o.kind], prev.line, o.line)
		}
		if st.at[0] == 0 {
			return lineErr(o.line, "%s %d on stream %d can start before what the device's stream did before the schedule (the timer's start, or the kernel that made x): record an event on the device's stream first, and make stream %d wait for it", o.kind, o.arg, o.stream, o.stream)
		}
		ops[o.kind][o.arg] = st
		all = append(all, st)
	}
	for c := 0; c < s.chunks; c++ {
		for _, kind := range []string{"in", "work", "out"} {
			if _, ok := ops[kind][c]; !ok {
				return fmt.Errorf("chunk %d is never %s: the schedule has no '%s %d'", c, doneTo[kind], kind, c)
			}
		}
		in, work, out := ops["in"][c], ops["work"][c], ops["out"][c]
		for _, o := range []stamped{work, out} {
			if o.buf != in.buf {
				return lineErr(o.line, "%s %d goes through device buffer %d, but in %d (line %d) put chunk %d in buffer %d: a chunk's in, work and out name one buffer", o.kind, c, o.buf, c, in.line, c, in.buf)
			}
		}
		if err := ordered(in, work, "reads the chunk"); err != nil {
			return err
		}
		if err := ordered(work, out, "copies out the chunk's y"); err != nil {
			return err
		}
		if out.at[out.stream] > cur[0][out.stream] {
			return lineErr(out.line, "out %d on stream %d can still be running when y is read: the device's stream, which cudarepl waits for, never waits for it. End with 'on %d: record E' and then 'wait E'", c, out.stream, out.stream)
		}
	}
	if s.buffers > 0 {
		if err := s.shared(ops); err != nil {
			return err
		}
	}
	if s.pageable {
		return lineErr(s.hostLine, "host pageable: with x and y in pageable memory every async copy goes through the driver's own pinned buffer, and such a copy may return only once it is done "+
			"(CUDA's API synchronization behavior): the host may then wait at each copy before it enqueues the next operation, so the streams cannot overlap as the schedule asks. Keep x and y pinned: 'host pinned'")
	}
	if s.chunks < 2 {
		return nil
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if !a.before(b) && !b.before(a) {
				return nil
			}
		}
	}
	return errors.New("nothing in this schedule can run at once: every operation waits for the one before, so it takes as long as the serial pipeline. Put the chunks on several streams, as in 'on 1 + c % 4: in c'")
}

// recorded is an event's last record: the op, what it stands for, and
// whether a wait has taken it since.
type recorded struct {
	schedOp
	at     clock
	waited bool
}

// covers reports whether clock a counts everything b does.
func covers(a, b clock) bool {
	for k := range a {
		if a[k] < b[k] {
			return false
		}
	}
	return true
}

// shared says how two chunks that go through one device buffer can
// overwrite each other there: the later chunk's in may not start before
// the earlier chunk's kernel has read x, nor its kernel before the
// earlier chunk's y is copied out. "Later" is the chunk whose in was
// enqueued later.
func (s *schedule) shared(ops map[string]map[int]stamped) error {
	users := make([][]int, s.buffers) // each buffer's chunks, in the order of their ins
	for c := 0; c < s.chunks; c++ {
		users[ops["in"][c].buf] = append(users[ops["in"][c].buf], c)
	}
	for b, cs := range users {
		slices.SortFunc(cs, func(x, y int) int { return ops["in"][x].index - ops["in"][y].index })
		for i, c1 := range cs {
			for _, c2 := range cs[i+1:] {
				in2, w1, w2, o1 := ops["in"][c2], ops["work"][c1], ops["work"][c2], ops["out"][c1]
				advice := fmt.Sprintf("A chunk may use a buffer once the chunk before it there is copied out: keep the chunks that share a buffer on one stream, in order, "+
					"or make the later chunk's stream wait for an event recorded after out %d", c1)
				switch {
				case !w1.before(in2):
					return lineErr(in2.line, "in %d @ %d on stream %d can overwrite device buffer %d before work %d on stream %d (line %d) has read chunk %d from it. %s",
						c2, b, in2.stream, b, c1, w1.stream, w1.line, c1, advice)
				case !o1.before(w2):
					return lineErr(w2.line, "work %d @ %d on stream %d can overwrite device buffer %d before out %d on stream %d (line %d) has copied chunk %d's y out of it. %s",
						c2, b, w2.stream, b, c1, o1.stream, o1.line, c1, advice)
				}
			}
		}
	}
	return nil
}

// ordered says why b, which reads what a writes, can start before a is done.
func ordered(a, b stamped, what string) error {
	switch {
	case a.before(b):
		return nil
	case b.index < a.index:
		return lineErr(b.line, "%s %d is enqueued before %s %d (line %d): it %s before it is there", b.kind, b.arg, a.kind, a.arg, a.line, what)
	}
	return lineErr(b.line, "%s %d on stream %d can start before %s %d on stream %d (line %d) is done: nothing orders them. Record an event on stream %d after %s %d, and make stream %d wait for it",
		b.kind, b.arg, b.stream, a.kind, a.arg, a.stream, a.line, a.stream, a.kind, a.arg, b.stream)
}
