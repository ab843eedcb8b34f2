package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"cudarepl/nvrtc"
)

// Kernel names a kernel of a loaded image. It is a plain value: a Worker
// reloads the image by itself after a restart.
type Kernel struct {
	Name  string
	Image string // the Image's Key
	Attrs KernelAttrs
}

// KernelAttrs is what the driver reports for a loaded kernel
// (cuFuncGetAttribute).
type KernelAttrs struct {
	MaxThreadsPerBlock int   // the most threads a block of it can have
	Registers          int   // per thread
	SharedStatic       int64 // bytes
	Local              int64 // bytes of local memory per thread (spills, stack)
	Const              int64 // bytes
	PTXVersion         int   // e.g. 90
	BinaryVersion      int   // e.g. 90
}

type kernelKey struct{ image, name string }

// CUfunction_attribute values, from cuda.h.
const (
	funcMaxThreadsPerBlock   = 0
	funcSharedSizeBytes      = 1
	funcConstSizeBytes       = 2
	funcLocalSizeBytes       = 3
	funcNumRegs              = 4
	funcPTXVersion           = 5
	funcBinaryVersion        = 6
	funcMaxDynamicSharedSize = 8
)

// LoadKernel loads img once and returns its kernel name.
func (c *Context) LoadKernel(img *nvrtc.Image, name string) (Kernel, error) {
	if img == nil || len(img.CUBIN) == 0 {
		return Kernel{}, errors.New("gpu: load kernel: empty image")
	}
	k := Kernel{Name: name, Image: img.Key}
	err := c.do(func() error {
		var err error
		k.Attrs, err = c.loadKernel(img, name)
		return err
	})
	return k, err
}

func (c *Context) loadKernel(img *nvrtc.Image, name string) (KernelAttrs, error) {
	d := c.d
	mod, ok := c.modules[img.Key]
	if !ok {
		var pin runtime.Pinner
		pin.Pin(&img.CUBIN[0])
		err := d.check(d.cuModuleLoadData(&mod, &img.CUBIN[0]), "cuModuleLoadData", img.Name)
		pin.Unpin()
		if err != nil {
			return KernelAttrs{}, err
		}
		c.modules[img.Key] = mod
	}
	var f uintptr
	if r := d.cuModuleGetFunction(&f, mod, img.Symbol(name)); r != 0 {
		var names []string
		for _, k := range img.Kernels {
			names = append(names, k.Name)
		}
		return KernelAttrs{}, fmt.Errorf("gpu: kernel %q not found in %s (it has: %s); declare kernels extern \"C\": %w",
			name, img.Name, strings.Join(names, ", "), d.check(r, "cuModuleGetFunction", name))
	}
	c.kernels[kernelKey{img.Key, name}] = f
	attr := func(a int32) int {
		var v int32
		d.cuFuncGetAttribute(&v, a, f)
		return int(v)
	}
	return KernelAttrs{
		MaxThreadsPerBlock: attr(funcMaxThreadsPerBlock),
		Registers:          attr(funcNumRegs),
		SharedStatic:       int64(attr(funcSharedSizeBytes)),
		Local:              int64(attr(funcLocalSizeBytes)),
		Const:              int64(attr(funcConstSizeBytes)),
		PTXVersion:         attr(funcPTXVersion),
		BinaryVersion:      attr(funcBinaryVersion),
	}, nil
}

// function returns the loaded CUfunction of k; on the GPU thread.
func (c *Context) function(k Kernel) (uintptr, error) {
	f, ok := c.kernels[kernelKey{k.Image, k.Name}]
	if !ok {
		return 0, fmt.Errorf("gpu: kernel %s is not loaded here; call LoadKernel first", k.Name)
	}
	return f, nil
}

// Occupancy returns how many blocks of k fit on one SM.
func (c *Context) Occupancy(k Kernel, block, dynShared int) (int, error) {
	var n int32
	err := c.do(func() error {
		f, err := c.function(k)
		if err != nil {
			return err
		}
		return c.d.check(c.d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, int32(block), uint64(dynShared)),
			"cuOccupancyMaxActiveBlocksPerMultiprocessor", fmt.Sprintf("%s block %d", k.Name, block))
	})
	return int(n), err
}

// Launch is one kernel launch: a grid of blocks of threads.
type Launch struct {
	Kernel Kernel
	Grid   Dim3
	Block  Dim3
	Shared int // dynamic shared memory per block, bytes
	Args   []Arg
}

func (l Launch) String() string {
	return l.Kernel.Name + " (grid " + l.Grid.String() + ", block " + l.Block.String() + ")"
}

// Name is the kernel's name.
func (l Launch) Name() string { return l.Kernel.Name }

// Prepare checks the launch shape against the kernel, opens the kernel up
// to its dynamic shared memory, and packs and pins the arguments.
func (l Launch) Prepare(x *Exec) (Step, error) {
	c := x.c
	f, err := c.function(l.Kernel)
	if err != nil {
		return Step{}, err
	}
	if l.Grid.Count() == 0 || l.Block.Count() == 0 {
		return Step{}, fmt.Errorf("gpu: launch %s: grid and block need at least one thread each", l)
	}
	if l.Kernel.Attrs.MaxThreadsPerBlock > 0 && l.Block.Count() > l.Kernel.Attrs.MaxThreadsPerBlock {
		return Step{}, fmt.Errorf("gpu: launch %s: %d threads per block, but this kernel allows at most %d",
			l, l.Block.Count(), l.Kernel.Attrs.MaxThreadsPerBlock)
	}
	if l.Shared > 48<<10 && c.maxDyn[f] < l.Shared {
		// Past 48 KiB a kernel must opt in to dynamic shared memory.
		if err := c.d.check(c.d.cuFuncSetAttribute(f, funcMaxDynamicSharedSize, int32(l.Shared)),
			"cuFuncSetAttribute", fmt.Sprintf("%s dynamic shared memory %d bytes", l.Kernel.Name, l.Shared)); err != nil {
			return Step{}, err
		}
		c.maxDyn[f] = l.Shared
	}
	p, err := packArgs(c.d, l.Args)
	if err != nil {
		return Step{}, fmt.Errorf("gpu: launch %s: %w", l, err)
	}
	st := Step{Release: p.release}
	var slotArgs []int // the arguments read from slots when enqueued
	for i, a := range l.Args {
		switch a.Kind {
		case ArgSlot:
			slotArgs = append(slotArgs, i)
			st.NoCapture = fmt.Sprintf("%s takes a slot's pointer, which a graph cannot follow", l.Name())
		case ArgPtr:
			st.Uses = append(st.Uses, DevicePtr(a.Bits))
		case ArgTensorMap:
			if a.Map != nil {
				st.Uses = append(st.Uses, a.Map.Base)
			}
		}
	}
	st.Enqueue = func() error {
		for _, i := range slotArgs {
			ptr, ok := c.slots[int(l.Args[i].Bits)]
			if !ok {
				return fmt.Errorf("gpu: launch %s: argument %d reads slot %d, which holds no memory: allocate it with an AllocSlot op first", l, i, l.Args[i].Bits)
			}
			p.vals[i] = uint64(ptr)
		}
		if r := c.d.launch(f, l.Grid, l.Block, uint32(l.Shared), c.stream, p.array()); r != 0 {
			return c.d.check(r, "cuLaunchKernel", l.String())
		}
		return nil
	}
	return st, nil
}

// kernelsOf lists the kernels op launches, for a Worker to load first.
func kernelsOf(op Op) []Kernel {
	if l, ok := unwrapped(op).(Launch); ok {
		return []Kernel{l.Kernel}
	}
	return nil
}

// loadKernelCall loads a kernel in the worker.
type loadKernelCall struct {
	Image *nvrtc.Image
	Name  string
}

func (c loadKernelCall) serve(dev Device, _ func(int, int)) (any, error) {
	return dev.LoadKernel(c.Image, c.Name)
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
	k, err := answer[Kernel](w.call("load kernel "+name, loadKernelCall{img, name}, nil))
	if err == nil {
		w.loaded[loadedKernel{w.ordinal, kernelKey{img.Key, name}}] = true
	}
	return k, err
}

// ensureLoaded loads, in the current worker, every kernel that ops launch;
// with w.mu held.
func (w *Worker) ensureLoaded(ops []Op) error {
	for _, op := range ops {
		for _, k := range kernelsOf(op) {
			if w.loaded[loadedKernel{w.ordinal, kernelKey{k.Image, k.Name}}] {
				continue
			}
			img, ok := w.images[k.Image]
			if !ok {
				return fmt.Errorf("gpu: kernel %s was not loaded through this device", k.Name)
			}
			if _, err := w.loadKernel(img, k.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// occupancyCall asks the worker how many blocks of a kernel fit on an SM.
type occupancyCall struct {
	Kernel        Kernel
	Block, Shared int
}

func (c occupancyCall) serve(dev Device, _ func(int, int)) (any, error) {
	return dev.Occupancy(c.Kernel, c.Block, c.Shared)
}

// Occupancy returns how many blocks of k fit on one SM.
func (w *Worker) Occupancy(k Kernel, block, dynShared int) (int, error) {
	return answer[int](w.doOps("occupancy of "+k.Name, occupancyCall{k, block, dynShared}, nil, Launch{Kernel: k}))
}

func init() {
	registerType(loadKernelCall{})
	registerType(occupancyCall{})
	registerType(Kernel{})
}
