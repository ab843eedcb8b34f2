package lessons

import (
	"errors"
	"fmt"
	"strings"

	"cudarepl/gpu"
	"cudarepl/kernels"
	"cudarepl/nvrtc"
)

// ShowKernel prints kernel versions from the lesson's file, with what ptxas
// reports of each where NVRTC is present.
type ShowKernel struct {
	Names []string // kernel names; nil shows every version of the ladder
	File  string   // the file in package kernels; the lesson's when ""
}

// Kind is "kernel".
func (*ShowKernel) Kind() string { return "kernel" }

// kernels returns the file it shows kernels from and their names.
func (a *ShowKernel) kernels(l *Lesson) (string, []string) {
	_, names, _ := a.names(l)
	return a.File, names
}

// names returns the source of its file and the kernels it shows of it:
// Names, or every version of the file's ladder.
func (a *ShowKernel) names(l *Lesson) (nvrtc.Source, []string, error) {
	src, err := kernelSource(l, a.File)
	if err != nil || a.Names != nil {
		return src, a.Names, err
	}
	vs, err := kernels.Ladder(src)
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	return src, names, err
}

// Do prints the kernels.
func (a *ShowKernel) Do(env *Env, l *Lesson, step string) error {
	src, names, err := a.names(l)
	if err != nil {
		return err
	}
	img, cerr := env.Compile(src)
	for _, n := range names {
		body, err := kernels.Function(src, n)
		if err != nil {
			return err
		}
		env.printf("%s\n", body)
		if cerr == nil {
			if need := featureArch(body); need != "" && img.Arch != need {
				// The body is preprocessed away: its resources would be an empty kernel's.
				env.printf("  ↳ left out when compiled for %s: its body needs %s (%s)\n", img.Arch, need, archNames[need])
			} else if res, ok := img.Kernel(n); ok {
				env.printf("  ↳ %s (NVRTC %s, %s)\n", resourceLine(res), img.NVRTC, img.Arch)
			}
		}
		env.printf("\n")
	}
	if cerr != nil {
		env.notCompiled(cerr)
	}
	return nil
}

// featureArch is the architecture a kernel's body is written for when the
// body is compiled only there (inside #if defined(__CUDA_ARCH_FEAT_SM90_ALL)),
// or "".
func featureArch(body string) string {
	if strings.Contains(body, "__CUDA_ARCH_FEAT_SM90_ALL") {
		return "sm_90a"
	}
	return ""
}

// CompileHere compiles a kernel file of lesson l (its own when file is "")
// for this env's GPU, or the reference GPU in replay. Where NVRTC is
// missing it says so once and returns ok false with a nil error: there is
// nothing more to show.
func (e *Env) CompileHere(l *Lesson, file string) (img *nvrtc.Image, src nvrtc.Source, ok bool, err error) {
	if src, err = kernelSource(l, file); err != nil {
		return nil, src, false, err
	}
	img, err = e.Compile(src)
	if errors.Is(err, gpu.ErrNoGPU) {
		e.notCompiled(err)
		return nil, src, false, nil
	}
	return img, src, err == nil, err
}

// compileOnly compiles the problem's kernels in replay mode and reports
// them, or says why it cannot.
func compileOnly(env *Env, l *Lesson, p *Problem) error {
	if l.Kernels == "" && p.Kernels == "" {
		return nil
	}
	img, src, ok, err := env.CompileHere(l, p.Kernels)
	if !ok {
		return err
	}
	env.printf("Compiled here with NVRTC %s for %s:\n", img.NVRTC, img.Arch)
	width := 16
	for _, name := range kernels.Names(src) {
		width = max(width, len(name))
	}
	for _, name := range kernels.Names(src) {
		k, ok := img.Kernel(name)
		if !ok {
			continue
		}
		body, _ := kernels.Function(src, name)
		if need := featureArch(body); need != "" && img.Arch != need {
			env.printf("  %-*s left out: its body needs %s\n", width, name, need)
			continue
		}
		env.printf("  %-*s %s\n", width, k.Name, resourceLine(k))
	}
	return nil
}

// resourceLine is what ptxas reports of a kernel, in one line.
func resourceLine(k nvrtc.KernelResources) string {
	return fmt.Sprintf("%d registers/thread, %d B static shared memory, %d B spilled", k.Registers, k.SharedStatic, k.SpillStores)
}
