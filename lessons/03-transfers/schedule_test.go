package transfers

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"cudarepl/gpu"
)

// head and tail start and end a schedule on streams 1 to 4 correctly.
const (
	head = "chunks 4\nrecord 0\nfor s in 1..5 {\n  on s: wait 0\n}\n"
	tail = "for s in 1..5 {\n  on s: record s\n  wait s\n}\n"
)

// bufHead is head with n device buffers.
func bufHead(n int) string {
	return strings.Replace(head, "chunks 4\n", fmt.Sprintf("chunks 4\nbuffers %d\n", n), 1)
}

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // part of the error; "" for none
		ops       int
	}{
		{"the solution", "chunks 2\nrecord 0\non 1: wait 0\non 2: wait 0\nfor c in 0..chunks {\n on 1 + c: in c # a comment\n on 1+c: work c\n on (c+1)*1: out c\n}\non 1: record 1\non 2: record 2\nwait 1\nwait 2\n", "", 13},
		{"nested loops", "chunks 4\nfor i in 0..2 {\n for j in 0..2 {\n  in 2*i + j\n }\n}\n", "", 4},
		{"an empty loop", "chunks 1\nfor c in 3..1 {\n  in c\n}\nin 0\n", "", 1},
		{"division and remainder", "chunks 8\nin 7 / 2\nin -3 % 2 + 3\n", "", 2},
		{"no chunks line", "in 0\n", "before the schedule says how many chunks", 0},
		{"chunks never set", "# nothing\n", "never says how many chunks", 0},
		{"chunks twice", "chunks 2\nchunks 3\n", "line 2: chunks is set twice", 0},
		{"too many chunks", "chunks 5000\n", "chunks 5000: from 1 to 1024", 0},
		{"unknown operation", "chunks 2\ncopy 0\n", `line 2: "copy" is not an operation`, 0},
		{"chunk out of range", "chunks 2\nin 2\n", "line 2: in 2: the chunks are 0 to 1", 0},
		{"stream out of range", "chunks 2\non 9: in 0\n", "stream 9: streams are 0 (the device's) to 8", 0},
		{"event out of range", "chunks 2\nrecord 64\n", "event 64: events are 0 to 63", 0},
		{"no colon", "chunks 2\non 1 in 0\n", "is followed by ':'", 0},
		{"unknown name", "chunks 2\nin k\n", `unknown name "k"`, 0},
		{"division by zero", "chunks 2\nin 1 / 0\n", "divides by zero", 0},
		{"unclosed paren", "chunks 2\nin (1\n", "is never closed", 0},
		{"stray token", "chunks 2\nin 1 1\n", "unexpected", 0},
		{"missing number", "chunks 2\nwork\n", "work needs a number", 0},
		{"unclosed loop", "chunks 2\nfor c in 0..2 {\n in c\n", "never closed", 0},
		{"stray brace", "chunks 2\n}\n", "line 2: a '}' that closes no 'for'", 0},
		{"loop without brace", "chunks 2\nfor c in 0..2\n", "ends with '{'", 0},
		{"loop without range", "chunks 2\nfor c in 2 {\n}\n", "written A..B", 0},
		{"loop counter reused", "chunks 2\nfor c in 0..1 {\nfor c in 0..1 {\n}\n}\n", "already the counter", 0},
		{"runaway loops", "chunks 1\nfor i in 0..1000 {\nfor j in 0..1000 {\n}\n}\n", "more than 100000 times", 0},
		{"too many operations", "chunks 1\nfor i in 0..30000 {\nrecord 0\n}\n", "more than 20000 operations", 0},
		{"buffers", "chunks 4\nbuffers 2\nfor c in 0..chunks {\n in c @ c % 2\n work c @ c%2\n out c @c % 2\n}\n", "", 12},
		{"host pinned and pageable", "chunks 1\nhost pageable\nin 0\n", "", 1},
		{"buffers before chunks", "buffers 2\n", "before the schedule says how many chunks", 0},
		{"buffers after an operation", "chunks 2\nrecord 0\nbuffers 2\n", "comes after the first operation", 0},
		{"buffers twice", "chunks 2\nbuffers 1\nbuffers 1\n", "line 3: buffers is set twice", 0},
		{"more buffers than chunks", "chunks 2\nbuffers 3\n", "buffers 3: from 1 to the 2 chunks", 0},
		{"a buffer without buffers", "chunks 2\nin 0 @ 0\n", "names a device buffer, but the schedule has no 'buffers N' line", 0},
		{"no buffer with buffers", "chunks 2\nbuffers 2\nin 0\n", "in 0 names no device buffer", 0},
		{"buffer out of range", "chunks 2\nbuffers 2\nout 1 @ 2\n", "out 1 @ 2: the buffers are 0 to 1", 0},
		{"an event's buffer", "chunks 2\nbuffers 2\nrecord 1 @ 0\n", "an event has none", 0},
		{"host twice", "chunks 2\nhost pinned\nhost pinned\n", "host is set twice", 0},
		{"host elsewhere", "chunks 2\nhost mapped\n", `host "mapped"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := parseSchedule(tc.src)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case tc.want == "" && len(sc.ops) != tc.ops:
				t.Fatalf("%d operations, want %d: %v", len(sc.ops), tc.ops, sc.ops)
			}
		})
	}
}

func TestScheduleCheck(t *testing.T) {
	loop := func(body string) string { return "for c in 0..chunks {\n" + body + "}\n" }
	for _, tc := range []struct {
		name, src string
		want      string // part of the error; "" for a sound schedule
	}{
		{"four streams", head + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") + tail, ""},
		{"copies and kernels on their own streams, ordered by events",
			head + loop("on 1: in c\non 1: record 10 + c\non 2: wait 10 + c\non 2: work c\non 2: record 20 + c\non 3: wait 20 + c\non 3: out c\n") + tail, ""},
		{"one chunk on the device's stream alone", "chunks 1\nin 0\nwork 0\nout 0\n", ""},
		{"everything on the device's stream", "chunks 2\n" + loop("in c\nwork c\nout c\n"), "nothing in this schedule can run at once"},
		{"one stream", "chunks 2\nrecord 0\non 1: wait 0\n" + loop("on 1: in c\non 1: work c\non 1: out c\n") + "on 1: record 1\nwait 1\n", "nothing in this schedule can run at once"},
		{"work before its copy on one stream", head + loop("on 1 + c%4: work c\non 1 + c%4: in c\non 1 + c%4: out c\n") + tail, "work 0 is enqueued before in 0"},
		{"work on another stream, unordered", head + loop("on 1: in c\non 2: work c\non 2: out c\n") + tail, "work 0 on stream 2 can start before in 0 on stream 1"},
		{"out on another stream, unordered", head + loop("on 1: in c\non 1: work c\non 3: out c\n") + tail, "out 0 on stream 3 can start before work 0 on stream 1"},
		{"not joined", head + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") + "on 1: record 1\nwait 1\n", "out 1 on stream 2 can still be running when y is read"},
		{"joined before the last copy", head + loop("on 1 + c%4: in c\non 1 + c%4: work c\n") + tail + loop("on 1 + c%4: out c\n"), "out 0 on stream 1 can still be running"},
		{"no start", "chunks 4\n" + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") + tail, "in 0 on stream 1 can start before what the device's stream did"},
		{"wait before record", "chunks 4\non 1: wait 3\n", "wait 3 on stream 1 comes before any 'record 3'"},
		{"a chunk missing", head + "for c in 1..chunks {\non 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n}\n" + tail, "chunk 0 is never copied in"},
		{"a kernel missing", head + loop("on 1 + c%4: in c\non 1 + c%4: out c\n") + tail, "chunk 0 is never worked on"},
		{"a chunk twice", head + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") + "in 2\n" + tail, "chunk 2 is copied in twice"},
		// An event recorded again: a wait takes the record before it.
		{"a re-recorded event", head + loop("on 1: in c\non 1: record 9\non 2: wait 9\non 2: work c\non 2: out c\n") + tail, ""},
		{"waiting on the old record", head + "on 1: in 0\non 1: record 9\non 1: in 1\non 2: wait 9\non 2: work 0\non 2: work 1\non 2: out 0\non 2: out 1\n" + "on 1: in 2\non 1: in 3\non 1: record 9\non 2: wait 9\non 2: work 2\non 2: work 3\non 2: out 2\non 2: out 3\n" + tail,
			"work 1 on stream 2 can start before in 1 on stream 1"},
		// An event recorded again before any wait: harmless on one stream,
		// where the later record stands for all the earlier did; on
		// another, the earlier record is lost.
		{"an event recorded twice on one stream", head + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") +
			"on 1: record 1\non 1: record 1\nwait 1\nfor s in 2..5 {\n  on s: record s\n  wait s\n}\n", ""},
		{"an event recorded on two streams", head + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") +
			"on 1: record 1\non 2: record 1\nwait 1\nfor s in 3..5 {\n  on s: record s\n  wait s\n}\n",
			"line 12: record 1 on stream 2 replaces event 1's record on stream 1 (line 11) before anything waited for it"},
		{"an event recorded on a stream that waited for it", head + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") +
			"on 1: record 1\non 2: wait 1\non 2: record 1\nwait 1\nfor s in 3..5 {\n  on s: record s\n  wait s\n}\n", ""},
		{"pageable", "chunks 4\nhost pageable\nrecord 0\nfor s in 1..5 {\n  on s: wait 0\n}\n" + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") + tail,
			"line 2: host pageable"},
		{"pinned", "chunks 4\nhost pinned\nrecord 0\nfor s in 1..5 {\n  on s: wait 0\n}\n" + loop("on 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n") + tail, ""},
		// Device buffers: chunks that share one must not overlap there.
		{"a buffer a stream", bufHead(4) + loop("on 1 + c%4: in c @ c%4\non 1 + c%4: work c @ c%4\non 1 + c%4: out c @ c%4\n") + tail, ""},
		{"one buffer on one stream", bufHead(1) + loop("on 1: in c @ 0\non 1: work c @ 0\non 1: out c @ 0\n") + tail,
			"nothing in this schedule can run at once"},
		{"two buffers on four streams", bufHead(2) + loop("on 1 + c%4: in c @ c%2\non 1 + c%4: work c @ c%2\non 1 + c%4: out c @ c%2\n") + tail,
			"in 2 @ 0 on stream 3 can overwrite device buffer 0 before work 0 on stream 1"},
		{"a shared buffer, ordered after the kernel only",
			bufHead(2) + "on 1: in 0 @ 0\non 1: work 0 @ 0\non 1: record 10\non 1: out 0 @ 0\non 2: wait 10\non 2: in 1 @ 0\non 2: work 1 @ 0\non 2: out 1 @ 0\n" +
				"on 3: in 2 @ 1\non 3: work 2 @ 1\non 3: out 2 @ 1\non 4: in 3 @ 1\non 4: work 3 @ 1\non 4: out 3 @ 1\n" + tail,
			"work 1 @ 0 on stream 2 can overwrite device buffer 0 before out 0 on stream 1"},
		{"a shared buffer, ordered after the copy out",
			bufHead(2) + "on 1: in 0 @ 0\non 1: work 0 @ 0\non 1: out 0 @ 0\non 1: record 10\non 2: wait 10\non 2: in 1 @ 0\non 2: work 1 @ 0\non 2: out 1 @ 0\n" +
				"on 3: in 2 @ 1\non 3: work 2 @ 1\non 3: out 2 @ 1\non 3: record 11\non 4: wait 11\non 4: in 3 @ 1\non 4: work 3 @ 1\non 4: out 3 @ 1\n" + tail, ""},
		{"a shared buffer refilled before its kernel, on one stream",
			bufHead(1) + "on 1: in 0 @ 0\non 1: in 1 @ 0\non 1: work 0 @ 0\non 1: out 0 @ 0\non 1: work 1 @ 0\non 1: out 1 @ 0\n" +
				"for c in 2..4 {\non 2: in c @ 0\non 2: work c @ 0\non 2: out c @ 0\n}\n" + tail,
			"in 1 @ 0 on stream 1 can overwrite device buffer 0 before work 0 on stream 1"},
		{"a chunk's ops in two buffers", bufHead(2) + loop("on 1: in c @ c%2\non 1: work c @ (c+1)%2\non 1: out c @ c%2\n") + tail,
			"work 0 goes through device buffer 1, but in 0 (line 8) put chunk 0 in buffer 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := parseSchedule(tc.src)
			if err != nil {
				t.Fatalf("does not parse: %v", err)
			}
			err = sc.check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestLay checks the ops a schedule becomes: chunks cut as chunked cuts
// them, empty chunks left out, streams and events kept, each chunk where
// it is on the device too.
func TestLay(t *testing.T) {
	sc, err := parseSchedule(head + "for c in 0..chunks {\non 1 + c%4: in c\non 1 + c%4: work c\non 1 + c%4: out c\n}\n" + tail)
	if err != nil {
		t.Fatal(err)
	}
	// A chunk's op is a Memset standing for it: Value its kind's first
	// letter, Dst where it starts, Count how many elements.
	mark := func(kind string, from, at, n int) gpu.Op {
		if at != from {
			t.Errorf("%s of elements %d… goes to %d on the device, with no buffers", kind, from, at)
		}
		return gpu.Memset{Value: uint32(kind[0]), Dst: gpu.DevicePtr(from), Count: int64(n)}
	}
	for _, tc := range []struct {
		n      int
		counts []int64 // of the copies in
		events int
	}{
		{10, []int64{3, 3, 3, 1}, 13}, // 4 chunks of 3
		{2, []int64{1, 1}, 13},        // chunks 2 and 3 have no elements
		{4, []int64{1, 1, 1, 1}, 13},
	} {
		var counts []int64
		var events int
		for _, op := range sc.lay(tc.n, mark) {
			s, ok := op.(gpu.OnStream)
			if !ok {
				s.Op = op
			}
			switch o := s.Op.(type) {
			case gpu.Memset:
				if o.Value == 'i' {
					counts = append(counts, o.Count)
					if ok && s.Stream != 1+int(o.Dst)/((tc.n+3)/4)%4 {
						t.Errorf("n=%d: chunk at %d on stream %d", tc.n, o.Dst, s.Stream)
					}
				}
			case gpu.Record, gpu.WaitFor:
				events++
			}
		}
		if !slices.Equal(counts, tc.counts) || events != tc.events {
			t.Errorf("n=%d: copies in of %v elements and %d events, want %v and %d", tc.n, counts, events, tc.counts, tc.events)
		}
	}
}

// TestLayBuffers checks where a schedule with device buffers puts each
// chunk on the device: at its buffer, every buffer a chunk long, and never
// further past n than the device's x and y leave room for.
func TestLayBuffers(t *testing.T) {
	for _, tc := range []struct {
		n, chunks, buffers int
		at                 []int // of the copies in, chunk by chunk
	}{
		{10, 4, 2, []int{0, 3, 0, 3}},
		{10, 4, 4, []int{0, 3, 6, 9}}, // chunk 3 has 1 element, buffer 3 three
		{1, 32, 32, []int{0}},         // only chunk 0 has an element
		{1000, 32, 32, []int{0, 32, 64}},
	} {
		src := fmt.Sprintf("chunks %d\nbuffers %d\nfor c in 0..chunks {\n in c @ c %% %d\n work c @ c %% %d\n out c @ c %% %d\n}\n", tc.chunks, tc.buffers, tc.buffers, tc.buffers, tc.buffers)
		sc, err := parseSchedule(src)
		if err != nil {
			t.Fatal(err)
		}
		var at []int
		sc.lay(tc.n, func(kind string, from, a, count int) gpu.Op {
			if kind == "in" {
				at = append(at, a)
			}
			if a+count > tc.n+maxChunks {
				t.Errorf("n=%d, %d chunks, %d buffers: %s of elements %d… ends at %d on the device, past the %d there is room for", tc.n, tc.chunks, tc.buffers, kind, from, a+count, tc.n+maxChunks)
			}
			return gpu.Memset{}
		})
		if len(at) > len(tc.at) {
			at = at[:len(tc.at)]
		}
		if !slices.Equal(at, tc.at) {
			t.Errorf("n=%d, %d chunks, %d buffers: chunks at %v on the device, want %v first", tc.n, tc.chunks, tc.buffers, at, tc.at)
		}
	}
}
