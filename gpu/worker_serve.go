package gpu

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"cudarepl/internal/sysproc"
)

// workerBackends opens the Device a worker serves, by the name in
// sysproc.WorkerEnv.
var workerBackends = map[string]func() (Device, error){
	"gpu": func() (Device, error) { return OpenInProcess() },
}

// serves records that this program calls ServeWorker, so that Open may
// start it again as a worker.
var serves atomic.Bool

// ServeWorker makes this program able to be its own worker. In a process
// that Open started as a worker, it serves calls until the parent goes
// away and then exits the process; in any other, it returns at once, and
// Open may from then on start this program as a worker.
//
// Call it before main runs anything else, and after every library whose
// work the worker must run has registered (RegisterLibrary): package
// worker does both from its init, so main packages import it for its
// effect. A test binary of a package that worker imports calls it from
// TestMain.
func ServeWorker() {
	serves.Store(true)
	if name := os.Getenv(sysproc.WorkerEnv); name != "" {
		keepNVLSOff()
		in, out, err := sysproc.Conn()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(serve(name, in, out))
	}
}

// serve answers calls read from in with replies written to out until in
// closes, on the Device backend opens. It returns the process exit status.
func serve(backend string, in io.Reader, out io.Writer) int {
	bw := bufio.NewWriter(out)
	enc := gob.NewEncoder(bw)
	send := func(r reply) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return bw.Flush()
	}
	open, ok := workerBackends[backend]
	if !ok {
		send(reply{Err: toWire(fmt.Errorf("gpu: worker: no backend %q", backend))})
		return 2
	}
	dev, err := open()
	if err != nil {
		send(reply{Err: toWire(err)})
		return 0
	}
	defer dev.Close()
	if send(reply{Info: dev.Info()}) != nil {
		return 1
	}
	// A heartbeat a few times a second keeps the parent's time limit from
	// firing on a long measurement, without flooding the pipe.
	var last time.Time
	progress := func(done, total int) {
		if now := time.Now(); now.Sub(last) > 50*time.Millisecond || done == total {
			last = now
			send(reply{Progress: true, Done: done, Total: total})
		}
	}
	dec := gob.NewDecoder(bufio.NewReader(in))
	for {
		var c call
		if err := dec.Decode(&c); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return 0 // the parent closed the pipe or went away
			}
			// A call of a type this program does not know: its library is
			// not linked into the worker.
			send(reply{Ends: true, Err: toWire(fmt.Errorf("%v (does the program import cudarepl/worker, which registers every library?)", err))})
			return 1
		}
		v, err := c.serve(dev, progress)
		r := reply{Value: v, Err: toWire(err)}
		if serr := send(r); serr != nil {
			if v == nil {
				return 1 // the pipe itself is gone
			}
			// The answer's type was not registered: gob wrote nothing of
			// it, so the stream goes on, and the caller learns why.
			r = reply{Err: toWire(fmt.Errorf("gpu: worker: the answer to %T, a %T, cannot cross to the caller (%v); register its type with gpu.RegisterLibrary", c, v, serr))}
			if send(r) != nil {
				return 1
			}
		}
		if r.Err != nil && r.Err.CUDA != nil && r.Err.CUDA.Sticky() {
			return 3 // the context is ruined; the parent starts a fresh worker
		}
	}
}
