package gpu

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
)

// Several GPUs in one process. GPU 0's context, the one OpenInProcess
// opens and a worker serves (the root), opens the context of each other
// GPU (a peer) on first use, as it was made itself but for the ordinal:
// a GPU thread, the GPU's primary context and a stream of its own. Peer
// access is enabled both ways between each new context and every one
// already open, where the GPUs allow it. Peers close with the root.
//
// Work that spans GPUs (RunMulti, a library's collective) is enqueued in
// order from the root's GPU thread, the current context switched per
// step, while the root's call holds every context it touches
// (Exec.Peer): NCCL's single-thread model, in which one GPU's stream can
// wait for another's event without a race.

// peerState is what a Context knows of the other GPUs of its process.
type peerState struct {
	ordinal  int        // which GPU: 0 for the root
	pctx     uintptr    // the GPU's primary context (CUcontext), current on its GPU thread
	root     *Context   // the root, on a peer; nil on the root
	openWith []*Context // the contexts open when this peer was made, to enable peer access with as it starts

	// On the root only.
	peersMu     sync.Mutex       // guards peers and peersClosed; held while a peer opens
	peers       map[int]*Context // the open peers, by ordinal
	peersClosed bool             // the root has closed them
	held        map[int]*Context // the peers whose mutex the root's running call holds (Exec.Peer); on the root's GPU thread
}

// CUresult values peer access may meet, from cuda.h.
const (
	errPeerAccessUnsupported    = 217 // CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
	errPeerAccessAlreadyEnabled = 704 // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
)

// rootContext is the context of GPU 0 of c's process.
func (c *Context) rootContext() *Context {
	if c.root != nil {
		return c.root
	}
	return c
}

// peer returns GPU i's context of c's process, opening it on first use.
func (c *Context) peer(i int) (*Context, error) {
	root := c.rootContext()
	if n := root.info.Devices; i < 0 || i >= n {
		return nil, noSuchGPU(i, n)
	}
	if i == 0 {
		return root, nil
	}
	root.peersMu.Lock()
	defer root.peersMu.Unlock()
	if p, ok := root.peers[i]; ok {
		return p, nil
	}
	if root.peersClosed {
		return nil, errors.New("gpu: device is closed")
	}
	p := newContext(root.d)
	p.ordinal, p.root = i, root
	p.openWith = append([]*Context{root}, slices.Collect(maps.Values(root.peers))...)
	ready := make(chan error, 1)
	go p.loop(ready)
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("gpu: open GPU %d: %w", i, err)
	}
	if root.peers == nil {
		root.peers = map[int]*Context{}
	}
	root.peers[i] = p
	return p, nil
}

// openPeer is On for a Context.
func (c *Context) openPeer(i int) (Device, error) {
	p, err := c.peer(i)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// noSuchGPU says that there is no GPU i where the driver shows n.
func noSuchGPU(i, n int) error {
	switch n {
	case 0:
		return fmt.Errorf("gpu: no GPU %d: the driver shows no GPU here", i)
	case 1:
		return fmt.Errorf("gpu: no GPU %d: the driver shows 1 GPU here, GPU 0", i)
	case 2:
		return fmt.Errorf("gpu: no GPU %d: the driver shows 2 GPUs here, 0 and 1", i)
	}
	return fmt.Errorf("gpu: no GPU %d: the driver shows %d GPUs here, 0 to %d", i, n, n-1)
}

// startPeer makes peer c's primary context current on its GPU thread,
// makes its stream, and enables peer access with the contexts open
// before it. What it made is released again where it fails.
func (c *Context) startPeer() (err error) {
	d, root, what := c.d, c.root, "GPU "+strconv.Itoa(c.ordinal)
	if err := d.check(d.cuDeviceGet(&c.dev, int32(c.ordinal)), "cuDeviceGet", what); err != nil {
		return err
	}
	if err := d.check(d.cuDevicePrimaryCtxRetain(&c.pctx, c.dev), "cuDevicePrimaryCtxRetain", what); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if c.stream != 0 {
				d.cuStreamDestroy(c.stream)
			}
			d.cuDevicePrimaryCtxRelease(c.dev)
		}
	}()
	if err := c.setCurrent(); err != nil {
		return err
	}
	// A blocking stream, as the root's.
	if err := d.check(d.cuStreamCreate(&c.stream, 0), "cuStreamCreate", what); err != nil {
		return err
	}
	info, err := d.queryDevice(c.dev)
	if err != nil {
		return err
	}
	info.Devices, info.NVRTCVersion, info.Libraries = root.info.Devices, root.info.NVRTCVersion, root.info.Libraries
	info.PeerAccess = d.peersReached(c.dev, info.Devices)
	c.info = info
	for _, o := range c.openWith {
		if err := c.enablePeerAccess(o); err != nil {
			return err
		}
	}
	c.openWith = nil
	return nil
}

// enablePeerAccess lets c's kernels and copies reach o's memory directly,
// and o's reach c's, where the GPUs can (cuDeviceCanAccessPeer); on c's
// GPU thread, c current.
func (c *Context) enablePeerAccess(o *Context) error {
	if err := c.enableAccessTo(o); err != nil {
		return err
	}
	return o.withCurrent(func() error { return o.enableAccessTo(c) })
}

// enableAccessTo enables access from c to o's memory (cuCtxEnablePeerAccess)
// where the GPUs allow it; with c current. Access that is on already, or
// that the pair does not support after all, is no error: copies between
// them then go through the host.
func (c *Context) enableAccessTo(o *Context) error {
	d := c.d
	what := fmt.Sprintf("GPU %d → GPU %d", c.ordinal, o.ordinal)
	var can int32
	if err := d.check(d.cuDeviceCanAccessPeer(&can, c.dev, o.dev), "cuDeviceCanAccessPeer", what); err != nil {
		return err
	}
	if can == 0 {
		return nil
	}
	switch r := d.cuCtxEnablePeerAccess(o.pctx, 0); r {
	case 0, errPeerAccessAlreadyEnabled, errPeerAccessUnsupported:
		return nil
	default:
		return d.check(r, "cuCtxEnablePeerAccess", what)
	}
}

// closePeers closes the root's peers, in ordinal order, once the root
// itself is closed: a library's state on the root (NCCL's communicators)
// may use them until then.
func (c *Context) closePeers() {
	c.peersMu.Lock()
	c.peersClosed = true
	peers := c.peers
	c.peers = nil
	c.peersMu.Unlock()
	for _, i := range slices.Sorted(maps.Keys(peers)) {
		peers[i].shutdown()
	}
}

// hold returns GPU i's context for the call that the root runs now,
// taking the peer's mutex until the call ends (letGo): its GPU thread
// runs nothing meanwhile, and the root's thread may use it. On the
// root's GPU thread. Only the root takes other contexts' mutexes, and
// only while it holds its own, so no two callers can each wait for what
// the other holds.
func (c *Context) hold(i int) (*Context, error) {
	if i == c.ordinal {
		return c, nil
	}
	if c.root != nil {
		return nil, fmt.Errorf("gpu: GPU %d's calls cannot reach GPU %d: only GPU 0's can (RunMulti, or Call on GPU 0)", c.ordinal, i)
	}
	if p, ok := c.held[i]; ok {
		return p, nil
	}
	p, err := c.peer(i)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return nil, fmt.Errorf("gpu: GPU %d is closed", i)
	case p.poison != nil:
		p.mu.Unlock()
		return nil, fmt.Errorf("gpu: GPU %d is unusable after an earlier fault: %w", i, p.poison)
	}
	if c.held == nil {
		c.held = map[int]*Context{}
	}
	c.held[i] = p
	return p, nil
}

// letGo gives back the peers that the call which ended with err held,
// and makes the root's context current again; a sticky fault makes the
// peers unusable too, since it may have been theirs. On the root's GPU
// thread, at the end of each call.
func (c *Context) letGo(err error) {
	if len(c.held) == 0 {
		return
	}
	for _, p := range c.held {
		if isSticky(err) {
			p.poison = err
		}
		p.mu.Unlock()
	}
	c.held = nil
	c.setCurrent()
}

// setCurrent makes c's context current on the calling thread
// (cuCtxSetCurrent).
func (c *Context) setCurrent() error {
	return c.d.check(c.d.cuCtxSetCurrent(c.pctx), "cuCtxSetCurrent", "GPU "+strconv.Itoa(c.ordinal))
}

// withCurrent runs f with c's context current on the calling thread, and
// then makes current again the context that was (cuCtxGetCurrent): for
// what the driver makes in the current context (streams, events, memory)
// from a thread where another GPU's is.
func (c *Context) withCurrent(f func() error) error {
	d := c.d
	var was uintptr
	if err := d.check(d.cuCtxGetCurrent(&was), "cuCtxGetCurrent", ""); err != nil {
		return err
	}
	if was == c.pctx {
		return f()
	}
	if err := c.setCurrent(); err != nil {
		return err
	}
	err := f()
	return errors.Join(err, d.check(d.cuCtxSetCurrent(was), "cuCtxSetCurrent", "back from GPU "+strconv.Itoa(c.ordinal)))
}

// eventIn is event i of c, made on first use with c's context current.
func (c *Context) eventIn(i int) (uintptr, error) {
	if e, ok := c.events[i]; ok {
		return e, nil
	}
	var e uintptr
	err := c.withCurrent(func() error {
		var err error
		e, err = c.event(i)
		return err
	})
	return e, err
}

// On returns GPU i of the process that dev's calls run in, as a Device
// with the whole Device API. For a *Context it is the context of GPU i,
// opened on first use; for a *Worker, a view of the same worker process
// whose every call runs against GPU i there (the worker opens it on
// first use). On(dev, 0) is GPU 0, the one Open and OpenInProcess open;
// a GPU that is not there is an error that says how many are.
//
// GPU i's memory, kernels and graphs are its own: load a kernel through
// On(dev, i) before launching it there. Closing a view closes nothing:
// the other GPUs close with GPU 0's device. The GPUs are numbered as the
// driver numbers them (CUDA_VISIBLE_DEVICES, where set, picks them).
func On(dev Device, i int) (Device, error) {
	switch d := dev.(type) {
	case *Worker:
		v, err := d.on(i)
		if err != nil {
			return nil, err
		}
		return v, nil
	case peerOpener:
		return d.openPeer(i)
	}
	if i == 0 {
		return dev, nil
	}
	return nil, fmt.Errorf("gpu: no GPU %d: a %T drives one GPU only", i, dev)
}

// peerOpener is a Device that can open the other GPUs of its process: a
// *Context, and the tests' fakes.
type peerOpener interface {
	openPeer(i int) (Device, error)
}

// on returns the view of GPU i of w's worker process; w.mu not held.
func (w *Worker) on(i int) (*Worker, error) {
	if i == w.ordinal {
		return w, nil
	}
	w.mu.Lock()
	n := w.info.Devices
	w.mu.Unlock()
	if i < 0 || i >= n {
		return nil, noSuchGPU(i, n)
	}
	v := w.view(i)
	if i != 0 {
		// Asking for its description opens the GPU in the worker: a GPU
		// that cannot be opened fails here, not at the first use.
		info, err := answer[DeviceInfo](v.do("describe the device", deviceInfoCall{}))
		if err != nil {
			return nil, err
		}
		v.gpuInfo = info
	}
	return v, nil
}

// view is a Worker whose calls run against GPU i of w's worker process,
// sharing w's process and what it made.
func (w *Worker) view(i int) *Worker { return &Worker{workerState: w.workerState, ordinal: i} }

// onDevice carries a call of a view of another GPU (On) to the worker,
// which serves it against that GPU's context.
type onDevice struct {
	Ordinal int
	Call    call
}

func (c onDevice) serve(dev Device, progress func(int, int)) (any, error) {
	d, err := On(dev, c.Ordinal)
	if err != nil {
		return nil, err
	}
	return c.Call.serve(d, progress)
}

// deviceInfoCall asks the worker for its device's description.
type deviceInfoCall struct{}

func (deviceInfoCall) serve(dev Device, _ func(int, int)) (any, error) { return dev.Info(), nil }

// Ordinal is which GPU x's context drives: 0 for the root, i for On(dev, i).
func (x *Exec) Ordinal() int { return x.c.ordinal }

// MakeCurrent makes x's context current on the thread that runs x
// (cuCtxSetCurrent): for after a library, such as NCCL, that switches
// devices itself, and before preparing an op on an Exec from Peer.
func (x *Exec) MakeCurrent() error { return x.c.setCurrent() }

// Peer returns GPU i's Exec, for a call of GPU 0's (a RunMulti, a
// Request served by Call on GPU 0) to prepare and enqueue work there from
// GPU 0's thread; Peer(x.Ordinal()) is x. The call holds GPU i's context
// from its first Peer(i) to its end, opening it if needed, and nothing
// else runs there meanwhile; GPU 0's context is current again once the
// call ends. The driver makes what an Exec makes (memory, events, plans)
// in the current context: MakeCurrent the Exec first, and x's again
// after. From another GPU's calls, Peer of any other GPU fails: only GPU
// 0's thread may hold several contexts, which keeps two calls from each
// waiting for the other.
func (x *Exec) Peer(i int) (*Exec, error) {
	if i == x.c.ordinal {
		return x, nil
	}
	home := x.c
	if x.home != nil {
		home = x.home
	}
	p, err := home.hold(i)
	if err != nil {
		return nil, err
	}
	if p == home {
		return &Exec{c: p}, nil
	}
	return &Exec{c: p, home: home}, nil
}

// DeviceStream returns stream s of GPU i (see OnStream): 0 its own,
// others made on first use, in GPU i's context, whichever is current.
// GPU i is held as Peer(i) holds it.
func (x *Exec) DeviceStream(i, s int) (uintptr, error) {
	if s < 0 {
		return 0, fmt.Errorf("gpu: stream %d of GPU %d: streams are numbered from 0", s, i)
	}
	p, err := x.Peer(i)
	if err != nil {
		return 0, err
	}
	var st uintptr
	err = p.c.withCurrent(func() error {
		var err error
		st, err = p.c.streamNumbered(s)
		return err
	})
	return st, err
}

// PeerCopy copies Bytes from Src, on GPU SrcDevice, to Dst, on GPU
// DstDevice, on the stream it is enqueued on (cuMemcpyPeerAsync): over
// NVLink or PCIe directly where peer access is on between the two, else
// through host memory. Both GPUs are of the process its device's calls
// run in (On); either may be the one that enqueues it.
type PeerCopy struct {
	Dst       DevicePtr
	DstDevice int
	Src       DevicePtr
	SrcDevice int
	Bytes     int64
}

// Name says from which GPU to which.
func (p PeerCopy) Name() string {
	return fmt.Sprintf("peer copy GPU %d → GPU %d", p.SrcDevice, p.DstDevice)
}

// Prepare checks the size and opens both GPUs' contexts if needed.
func (p PeerCopy) Prepare(x *Exec) (Step, error) {
	if p.Bytes <= 0 {
		return Step{}, fmt.Errorf("gpu: %s of %d bytes: size must be positive", p.Name(), p.Bytes)
	}
	dst, err := x.c.peer(p.DstDevice)
	if err != nil {
		return Step{}, fmt.Errorf("gpu: %s: %w", p.Name(), err)
	}
	src, err := x.c.peer(p.SrcDevice)
	if err != nil {
		return Step{}, fmt.Errorf("gpu: %s: %w", p.Name(), err)
	}
	c, d := x.c, x.c.d
	detail := fmt.Sprintf("%d bytes, GPU %d → GPU %d", p.Bytes, p.SrcDevice, p.DstDevice)
	return Step{Uses: []DevicePtr{p.Dst, p.Src}, Enqueue: func() error {
		return d.check(d.cuMemcpyPeerAsync(uint64(p.Dst), dst.pctx, uint64(p.Src), src.pctx, uint64(p.Bytes), c.stream), "cuMemcpyPeerAsync", detail)
	}}, nil
}

// WaitPeer makes the stream it is enqueued on wait until event Event of
// GPU Device has completed (cuStreamWaitEvent across contexts): the
// cross-GPU form of WaitFor, for the event a Record enqueued on that GPU
// recorded. Another GPU's events are reachable from GPU 0's calls only
// (RunMulti, Run on GPU 0), which hold that GPU's context while they run.
type WaitPeer struct{ Device, Event int }

// Name names the event and its GPU.
func (w WaitPeer) Name() string { return fmt.Sprintf("wait for event %d of GPU %d", w.Event, w.Device) }

// Prepare takes GPU Device's context for the call (Exec.Peer).
func (w WaitPeer) Prepare(x *Exec) (Step, error) {
	o, err := x.Peer(w.Device)
	if err != nil {
		return Step{}, fmt.Errorf("gpu: %s: %w", w.Name(), err)
	}
	c, d := x.c, x.c.d
	return Step{NoCapture: notCapturable(w.Name()), Enqueue: func() error {
		e, err := o.c.eventIn(w.Event)
		if err != nil {
			return err
		}
		return d.check(d.cuStreamWaitEvent(c.stream, e, 0), "cuStreamWaitEvent", w.Name())
	}}, nil
}

func init() {
	for _, v := range []any{onDevice{}, deviceInfoCall{}, DeviceInfo{}, PeerCopy{}, WaitPeer{}} {
		registerType(v)
	}
}

// loadedKernel is a kernel loaded on one GPU of a worker process.
type loadedKernel struct {
	ordinal int
	kernelKey
}

// peersReached lists the ordinals of the n GPUs, other than dev, whose
// memory dev reaches directly (cuDeviceCanAccessPeer): where a kernel may
// read another GPU's pointer, and a peer copy needs no staging through
// the host. A GPU the driver cannot say about is left out.
func (d *driverAPI) peersReached(dev int32, n int) []int {
	var out []int
	for j := range n {
		var other, can int32
		if d.cuDeviceGet(&other, int32(j)) != 0 || other == dev {
			continue
		}
		if d.cuDeviceCanAccessPeer(&can, dev, other) == 0 && can != 0 {
			out = append(out, j)
		}
	}
	return out
}
