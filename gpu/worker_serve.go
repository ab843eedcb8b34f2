package gpu

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"os"
	"time"
)

// workerBackends opens the Device a worker serves, by the name in workerEnv.
var workerBackends = map[string]func() (Device, error){
	"gpu": func() (Device, error) { return OpenInProcess() },
}

func init() {
	// A process started by Open as a worker serves and exits here, before
	// main, so that every program that imports gpu can be its own worker.
	if name := os.Getenv(workerEnv); name != "" {
		os.Exit(serveWorker(name))
	}
}

// serveWorker answers calls on fd 3 with replies on fd 4 until fd 3 closes.
// It returns the process exit status.
func serveWorker(backend string) int {
	in, out := os.NewFile(3, "calls"), os.NewFile(4, "replies")
	if in == nil || out == nil {
		fmt.Fprintf(os.Stderr, "gpu: worker: started without its pipes (fd 3, 4); %s is set only for workers\n", workerEnv)
		return 2
	}
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
	dec := gob.NewDecoder(bufio.NewReader(in))
	for {
		var c call
		if err := dec.Decode(&c); err != nil {
			return 0 // the parent closed the pipe or went away
		}
		r := handle(dev, c, send)
		if err := send(r); err != nil {
			return 1
		}
		if r.Err != nil && r.Err.CUDA != nil && r.Err.CUDA.Sticky() {
			return 3 // the context is ruined; the parent starts a fresh worker
		}
	}
}

// handle runs one call on dev. Progress is sent as it happens.
func handle(dev Device, c call, send func(reply) error) reply {
	var r reply
	var err error
	switch c.Method {
	case "MemInfo":
		r.N1, r.N2, err = dev.MemInfo()
	case "Alloc":
		var p DevicePtr
		p, err = dev.Alloc(c.Bytes)
		r.Ptr = uint64(p)
	case "Free":
		err = dev.Free(DevicePtr(c.Ptr))
	case "Write":
		err = dev.Write(DevicePtr(c.Ptr), c.Data)
	case "Read":
		r.Data = make([]byte, c.Bytes)
		err = dev.Read(r.Data, DevicePtr(c.Ptr))
	case "AllocHost":
		var p HostPtr
		p, err = dev.AllocHost(c.Bytes, c.Pinned)
		r.Ptr = uint64(p)
	case "FreeHost":
		err = dev.FreeHost(HostPtr(c.Ptr))
	case "WriteHost":
		err = dev.WriteHost(HostPtr(c.Ptr), c.Data)
	case "ReadHost":
		r.Data = make([]byte, c.Bytes)
		err = dev.ReadHost(r.Data, HostPtr(c.Ptr))
	case "LoadKernel":
		r.Kernel, err = dev.LoadKernel(c.Image, c.Name)
	case "Occupancy":
		var n int
		n, err = dev.Occupancy(c.Kernel, c.Block, c.Shared)
		r.N1 = int64(n)
	case "Run":
		err = dev.Run(c.Ops...)
	case "Capture":
		r.Graph, err = dev.Capture(c.Ops...)
	case "Update":
		r.Graph, err = dev.Update(c.Graph, c.Ops...)
	case "Timeline":
		r.Spans, err = dev.Timeline(c.Ops...)
	case "MemPool":
		r.Pool, err = dev.MemPool(c.Bytes)
	case "FreeGraph":
		err = dev.FreeGraph(c.Graph)
	case "Bench":
		b := c.Bench
		var last time.Time
		b.Progress = func(done, total int) {
			// A heartbeat a few times a second keeps the parent's time limit
			// from firing on a long measurement, without flooding the pipe.
			if now := time.Now(); now.Sub(last) > 50*time.Millisecond || done == total {
				last = now
				send(reply{Progress: true, Done: done, Total: total})
			}
		}
		r.Timing, err = dev.Bench(b)
	case "CallLibrary":
		r.Data, err = dev.CallLibrary(c.Name, c.Data)
	default:
		err = fmt.Errorf("gpu: worker: unknown call %q", c.Method)
	}
	r.Err = toWire(err)
	return r
}
