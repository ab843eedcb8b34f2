package gpu

import (
	"errors"
	"fmt"

	"cudarepl/nvrtc"
)

// MemInfo returns the free and total device memory in bytes.
func (w *Worker) MemInfo() (free, total int64, err error) {
	r, err := w.do("meminfo", call{Method: "MemInfo"})
	return r.N1, r.N2, err
}

// Alloc allocates bytes of device memory.
func (w *Worker) Alloc(bytes int64) (DevicePtr, error) {
	r, err := w.doOwning("device", fmt.Sprintf("alloc %d bytes", bytes), call{Method: "Alloc", Bytes: bytes})
	return DevicePtr(r.Ptr), err
}

// Free releases memory from Alloc. Memory of a worker that has since been
// replaced went with it: freeing it does nothing.
func (w *Worker) Free(p DevicePtr) error {
	_, err := w.doFreeing("device", uint64(p), "free", call{Method: "Free", Ptr: uint64(p)})
	return err
}

// pipePiece is the most bytes one call carries through the worker's pipe:
// a larger transfer goes as several calls, each within the time limit on
// its own, so that reading a gigabyte back is not taken for a hang.
const pipePiece = 64 << 20

// inPieces calls f on [from, to) pieces of n bytes, pipePiece at most
// each, in order, until one fails; once, on [0, 0), when n is 0.
func inPieces(n int, f func(from, to int) error) error {
	for from := 0; from < n || from == 0; from += pipePiece {
		if err := f(from, min(from+pipePiece, n)); err != nil || n == 0 {
			return err
		}
	}
	return nil
}

// Write copies src to device memory at dst.
func (w *Worker) Write(dst DevicePtr, src []byte) error {
	return inPieces(len(src), func(from, to int) error {
		_, err := w.do(fmt.Sprintf("write %d bytes", to-from), call{Method: "Write", Ptr: uint64(dst) + uint64(from), Data: src[from:to]})
		return err
	})
}

// Read copies device memory at src into dst.
func (w *Worker) Read(dst []byte, src DevicePtr) error {
	return inPieces(len(dst), func(from, to int) error {
		r, err := w.do(fmt.Sprintf("read %d bytes", to-from), call{Method: "Read", Ptr: uint64(src) + uint64(from), Bytes: int64(to - from)})
		copy(dst[from:to], r.Data)
		return err
	})
}

// AllocHost allocates host memory in the worker, page-locked when pinned.
func (w *Worker) AllocHost(bytes int64, pinned bool) (HostPtr, error) {
	r, err := w.doOwning("host", fmt.Sprintf("alloc host %d bytes", bytes), call{Method: "AllocHost", Bytes: bytes, Pinned: pinned})
	return HostPtr(r.Ptr), err
}

// FreeHost releases memory from AllocHost; like Free, it does nothing for
// memory of a worker since replaced.
func (w *Worker) FreeHost(p HostPtr) error {
	_, err := w.doFreeing("host", uint64(p), "free host", call{Method: "FreeHost", Ptr: uint64(p)})
	return err
}

// WriteHost copies src into the worker's host memory at dst.
func (w *Worker) WriteHost(dst HostPtr, src []byte) error {
	return inPieces(len(src), func(from, to int) error {
		_, err := w.do("write host", call{Method: "WriteHost", Ptr: uint64(dst) + uint64(from), Data: src[from:to]})
		return err
	})
}

// ReadHost copies the worker's host memory at src into dst.
func (w *Worker) ReadHost(dst []byte, src HostPtr) error {
	return inPieces(len(dst), func(from, to int) error {
		r, err := w.do("read host", call{Method: "ReadHost", Ptr: uint64(src) + uint64(from), Bytes: int64(to - from)})
		copy(dst[from:to], r.Data)
		return err
	})
}

// LoadKernel loads img in the worker and returns its kernel name. The image
// is kept, so that a restarted worker loads it again on the kernel's next use.
func (w *Worker) LoadKernel(img *nvrtc.Image, name string) (Kernel, error) {
	if img == nil || len(img.CUBIN) == 0 {
		return Kernel{}, errors.New("gpu: load kernel: empty image")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.images[img.Key] = img
	return w.loadKernel(img, name)
}

// loadKernel loads one kernel into the current worker; with w.mu held.
func (w *Worker) loadKernel(img *nvrtc.Image, name string) (Kernel, error) {
	r, err := w.call("load kernel "+name, call{Method: "LoadKernel", Image: img, Name: name}, nil)
	if err == nil {
		w.loaded[kernelKey{img.Key, name}] = true
	}
	return r.Kernel, err
}

// ensureLoaded loads, in the current worker, every kernel that ops launch;
// with w.mu held.
func (w *Worker) ensureLoaded(ops ...[]Op) error {
	for _, list := range ops {
		for _, op := range list {
			op, _ := unwrap(op)
			l, ok := op.(Launch)
			if !ok || w.loaded[kernelKey{l.Kernel.Image, l.Kernel.Name}] {
				continue
			}
			img, ok := w.images[l.Kernel.Image]
			if !ok {
				return fmt.Errorf("gpu: kernel %s was not loaded through this device", l.Kernel.Name)
			}
			if _, err := w.loadKernel(img, l.Kernel.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// Occupancy returns how many blocks of k fit on one SM.
func (w *Worker) Occupancy(k Kernel, block, dynShared int) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.ensureLoaded([]Op{Launch{Kernel: k}}); err != nil {
		return 0, err
	}
	r, err := w.call("occupancy of "+k.Name, call{Method: "Occupancy", Kernel: k, Block: block, Shared: dynShared}, nil)
	return int(r.N1), err
}

// Launch runs one kernel in the worker and waits for it.
func (w *Worker) Launch(l Launch) error {
	_, err := w.doOps("launch "+l.String(), call{Method: "Run", Ops: []Op{l}}, nil, []Op{l})
	return err
}

// Run enqueues ops in the worker and waits for them.
func (w *Worker) Run(ops ...Op) error {
	_, err := w.doOps("run "+describeOps(ops), call{Method: "Run", Ops: ops}, nil, ops)
	return err
}

// Capture records ops into a CUDA graph in the worker.
func (w *Worker) Capture(ops ...Op) (Graph, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, err := w.opsLocked("capture "+describeOps(ops), call{Method: "Capture", Ops: ops}, nil, ops)
	if err == nil {
		w.own("graph", r.Graph.ID)
	}
	return r.Graph, err
}

// Update records ops into a new graph in the worker and updates g to it.
func (w *Worker) Update(g Graph, ops ...Op) (Graph, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, err := w.opsLocked("update a graph with "+describeOps(ops), call{Method: "Update", Graph: g, Ops: ops}, nil, ops)
	if err != nil {
		return g, err
	}
	return r.Graph, nil
}

// Timeline runs ops once in the worker and returns when each ran.
func (w *Worker) Timeline(ops ...Op) ([]Span, error) {
	r, err := w.doOps("timeline of "+describeOps(ops), call{Method: "Timeline", Ops: ops}, nil, ops)
	return r.Spans, err
}

// MemPool sets the default pool's release threshold in the worker and
// reports what the pool holds.
func (w *Worker) MemPool(keep int64) (PoolStats, error) {
	r, err := w.do("memory pool", call{Method: "MemPool", Bytes: keep})
	return r.Pool, err
}

// FreeGraph releases a graph from Capture; like Free, it does nothing for
// a graph of a worker since replaced.
func (w *Worker) FreeGraph(g Graph) error {
	_, err := w.doFreeing("graph", g.ID, "free graph", call{Method: "FreeGraph", Graph: g})
	return err
}

// Bench times b inside the worker; b.Progress is called here as the
// worker reports.
func (w *Worker) Bench(b Bench) (Timing, error) {
	if err := b.defaults(); err != nil {
		return Timing{}, err
	}
	r, err := w.doOps("bench "+b.Name, call{Method: "Bench", Bench: b}, b.Progress, b.Ops...)
	return r.Timing, err
}

// CallLibrary sends data to the library registered as name in the worker.
func (w *Worker) CallLibrary(name string, data []byte) ([]byte, error) {
	r, err := w.doOps("call library "+name, call{Method: "CallLibrary", Name: name, Data: data}, nil)
	return r.Data, err
}

// do makes one call with w.mu held.
func (w *Worker) do(op string, c call) (reply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.call(op, c, nil)
}

// doOwning makes a call that allocates, and records what it made.
func (w *Worker) doOwning(kind, op string, c call) (reply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, err := w.call(op, c, nil)
	if err == nil {
		w.own(kind, r.Ptr)
	}
	return r, err
}

// doFreeing makes a call that frees id, unless a worker since replaced
// made it: then it went with that worker.
func (w *Worker) doFreeing(kind string, id uint64, op string, c call) (reply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale(kind, id) {
		return reply{}, nil
	}
	return w.call(op, c, nil)
}

// doOps makes a call that launches kernels, loading them first if this
// worker has not seen them.
func (w *Worker) doOps(op string, c call, progress func(done, total int), ops ...[]Op) (reply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opsLocked(op, c, progress, ops...)
}

// opsLocked is doOps with w.mu held, for a call that must record what it
// made before another call can replace the worker.
func (w *Worker) opsLocked(op string, c call, progress func(done, total int), ops ...[]Op) (reply, error) {
	if w.closed {
		return reply{}, errors.New("gpu: device is closed")
	}
	if w.p == nil {
		if err := w.restart(); err != nil {
			return reply{}, fmt.Errorf("gpu: %s: no worker: %w", op, err)
		}
	}
	if err := w.ensureLoaded(ops...); err != nil {
		return reply{}, err
	}
	return w.call(op, c, progress)
}
