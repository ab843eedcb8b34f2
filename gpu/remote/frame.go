package remote

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// Between a remote worker and its client the pipe carries frames, so that
// the calls and replies of the worker protocol share it with what the
// worker's host has to say besides: that it is still there (a heartbeat a
// second each way, so that a dead connection is told from a slow call),
// the logs a wrapper wrote, and how the worker process ended (so that a
// worker killed by its host is told from a lost connection). A frame is
// one kind byte, a big-endian uint32 length and that many bytes.
const (
	frameData  = 'd' // bytes of the worker protocol's gob stream
	frameBeat  = 'h' // a heartbeat; no payload
	frameLog   = 'l' // one log file a wrapper wrote, whole (host to client)
	frameExit  = 'x' // how the worker process ended, e.g. "signal: killed" (host to client)
	frameError = 'e' // why no worker could be started there (host to client)
)

// maxFrame bounds a frame's payload: a data frame is at most a pipe
// read, but a wrapper's log (Nsight Compute's CSV) can be large.
const maxFrame = 256 << 20

// frameWriter writes frames to w, one write each, from any goroutine.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// frame writes one frame of kind holding p.
func (f *frameWriter) frame(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = append(f.buf[:0], kind, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(f.buf[1:], uint32(len(p)))
	f.buf = append(f.buf, p...)
	_, err := f.w.Write(f.buf)
	if cap(f.buf) > 1<<20 {
		f.buf = nil // a large log once need not stay allocated
	}
	return err
}

// beat sends a heartbeat, unless a frame is being written: then that one
// says as much, and a write blocked on a dead connection does not hold
// up the caller, which must go on to notice the silence.
func (f *frameWriter) beat() {
	if !f.mu.TryLock() {
		return
	}
	defer f.mu.Unlock()
	f.w.Write([]byte{frameBeat, 0, 0, 0, 0})
}

// Write sends p as data frames.
func (f *frameWriter) Write(p []byte) (int, error) {
	const piece = 1 << 20
	for off := 0; off < len(p); off += piece {
		if err := f.frame(frameData, p[off:min(off+piece, len(p))]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

// readFrame reads one frame from r.
func readFrame(r *bufio.Reader) (kind byte, payload []byte, err error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("a frame of %d bytes, more than the %d a frame may hold", n, maxFrame)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return head[0], payload, nil
}
