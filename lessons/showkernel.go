package lessons

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cudarepl/gpu"
	"cudarepl/gpu/profiler"
	"cudarepl/kernels"
	"cudarepl/nvrtc"
)

// ShowKernel prints kernel versions from the lesson's file, with what ptxas
// reports of each where NVRTC is present. A kernel that hands its work to
// a __device__ function of its file (flash_v2 calls flash_v2_tile) shows
// with that tile code beneath it (tileCode), each function once.
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

// Do prints the kernels, each followed by its tile code.
func (a *ShowKernel) Do(env *Env, l *Lesson, step string) error {
	src, names, err := a.names(l)
	if err != nil {
		return err
	}
	img, cerr := env.Compile(src)
	shown := map[string]bool{} // functions printed already, as tile code of a kernel before
	for _, n := range names {
		if shown[n] {
			continue
		}
		body, err := kernels.Function(src, n)
		if err != nil {
			return err
		}
		env.printf("%s\n", body)
		if cerr == nil {
			if need := featureArch(body); need != "" && img.Arch != need {
				// The body is preprocessed away: its resources would be an empty kernel's.
				fa := env.forArch(l, src, n, need, img)
				if fa.report != "" {
					env.printf("  ↳ %s\n", fa.report)
				} else {
					env.printf("  ↳ left out when compiled for %s: its body needs %s\n", img.Arch, need)
				}
				if fa.recorded != "" {
					env.printf("  ↳ %s\n", fa.recorded)
				}
				env.needsArch([]string{n}, need, img)
			} else if res, ok := img.Kernel(n); ok {
				env.printf("  ↳ %s (NVRTC %s, %s)\n", resourceLine(res), img.NVRTC, img.Arch)
			}
		}
		env.printf("\n")
		tile, err := tileCode(src, n)
		if err != nil {
			return err
		}
		if len(tile) > 0 && shown[tile[0]] {
			env.printf("%s hands its work to %s, shown above.\n\n", n, tile[0])
			continue
		}
		if len(tile) > 0 {
			env.printf("%s hands its work to %s, in %s, and the functions it calls:\n\n", n, tile[0], src.Name)
		}
		for _, f := range tile {
			if shown[f] {
				continue
			}
			fn, err := kernels.Function(src, f)
			if err != nil {
				return err
			}
			env.printf("%s\n\n", fn)
			shown[f] = true
		}
	}
	if cerr != nil {
		env.notCompiled(cerr)
	}
	return nil
}

var (
	// deviceDef is a __device__ function's definition up to the "(" of
	// its parameters; the name is group 1.
	deviceDef = regexp.MustCompile(`__device__[^;{(=]*\b(\w+)\s*\(`)
	// comment is a // comment to the end of its line.
	comment = regexp.MustCompile(`//[^\n]*`)
	// leadingCall is a statement that calls a function, template arguments
	// and all: the name is group 1.
	leadingCall = regexp.MustCompile(`^(\w+)\s*(?:<[^;(]*>)?\s*\(`)
)

// tileCode returns the __device__ functions of src's own code (not its
// headers') that the kernel name hands its work to, where its body, but
// for shared-memory declarations and preprocessor lines, is one call to a
// function of its file: that function, then every function of the file it
// calls in turn, in file order, so that helpers written side by side
// under one comment stay so. A kernel that does its work itself has none:
// what it calls shows on its own, with 'show kernel NAME'.
func tileCode(src nvrtc.Source, name string) ([]string, error) {
	if !slices.Contains(kernels.Names(src), name) {
		return nil, nil // a __device__ function shows as itself
	}
	fn, err := kernels.Function(src, name)
	if err != nil {
		return nil, err
	}
	var defs []string
	for _, m := range deviceDef.FindAllStringSubmatch(src.Code, -1) {
		defs = append(defs, m[1])
	}
	var stmts []string
	for _, st := range strings.Split(bodyOf(fn), ";") {
		if st = strings.TrimSpace(st); st != "" && !strings.Contains(st, "__shared__") {
			stmts = append(stmts, st)
		}
	}
	if len(stmts) != 1 {
		return nil, nil
	}
	m := leadingCall.FindStringSubmatch(stmts[0])
	if m == nil || !slices.Contains(defs, m[1]) {
		return nil, nil
	}
	out, seen := []string{m[1]}, map[string]bool{name: true, m[1]: true}
	for i := 0; i < len(out); i++ {
		f, err := kernels.Function(src, out[i])
		if err != nil {
			return nil, err
		}
		for _, c := range callsOf(bodyOf(f), defs) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	at := func(f string) int { return slices.Index(defs, f) } // defs are in file order
	slices.SortStableFunc(out[1:], func(a, b string) int { return at(a) - at(b) })
	return out, nil
}

// bodyOf is the code of fn's body: from its first "{", without comments
// or preprocessor lines.
func bodyOf(fn string) string {
	if i := strings.Index(fn, "{"); i >= 0 {
		fn = fn[i+1:]
	}
	fn = strings.TrimSuffix(strings.TrimSpace(fn), "}")
	var lines []string
	for _, line := range strings.Split(comment.ReplaceAllString(fn, ""), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// callsOf lists the functions of names that code calls, in the order of
// their first call.
func callsOf(code string, names []string) []string {
	at := map[string]int{}
	var out []string
	for _, n := range names {
		if loc := regexp.MustCompile(`\b` + regexp.QuoteMeta(n) + `\s*(?:<[^;(]*>)?\s*\(`).FindStringIndex(code); loc != nil {
			if _, dup := at[n]; !dup {
				at[n] = loc[0]
				out = append(out, n)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return at[a] - at[b] })
	return out
}

// kernelText is the source of kernel name as a learner reads and edits
// it: its function, then its tile code (tileCode), each function's comment
// with it, a blank line between.
func kernelText(src nvrtc.Source, name string) (string, error) {
	fn, err := kernels.Function(src, name)
	if err != nil {
		return "", err
	}
	tile, err := tileCode(src, name)
	if err != nil {
		return "", err
	}
	parts := []string{fn}
	for _, f := range tile {
		body, err := kernels.Function(src, f)
		if err != nil {
			return "", err
		}
		parts = append(parts, body)
	}
	return strings.Join(parts, "\n\n"), nil
}

// edited returns src's code with code, the learner's version of kernel
// name, in place of the course's, and whether it changed anything. Where
// the kernel hands its work to tile code of the file, each function of
// theirs replaces the course's of that name (those they left out stay),
// and what else they wrote (a helper of their own) goes before the first
// of them, so that it is defined before anything that calls it. Every
// piece of theirs is marked with #line directives as lines of file, the
// name they know it by, numbered as in code, and the course's lines
// after it as lines of src, numbered as in src: a compiler's diagnostic
// names the line the learner wrote, or the course's line as it is.
func edited(src nvrtc.Source, name, code, file string) (out string, changed bool) {
	orig, err := kernelText(src, name)
	if err != nil || strings.TrimSpace(orig) == strings.TrimSpace(code) {
		return src.Code, false
	}
	tile, _ := tileCode(src, name)
	if len(tile) == 0 {
		fn, _ := kernels.Function(src, name)
		at := strings.Index(src.Code, fn)
		if at < 0 {
			return src.Code, false
		}
		return src.Code[:at] + marked(code, 1, file, lineAt(src.Code, at+len(fn)), src.Name) + src.Code[at+len(fn):], true
	}
	theirs := nvrtc.Source{Name: src.Name, Code: code}
	type swap struct{ course, yours string }
	var swaps []swap
	// rest is code without the functions that replace the course's, each
	// left as the blank lines it took, so that what remains keeps its
	// line numbers.
	rest, first := code, len(src.Code)
	for _, n := range append([]string{name}, tile...) {
		course, _ := kernels.Function(src, n)
		if at := strings.Index(src.Code, course); at >= 0 {
			first = min(first, at)
		}
		yours, err := kernels.Function(theirs, n)
		if err != nil {
			continue
		}
		swaps = append(swaps, swap{course, yours})
		rest = strings.Replace(rest, yours, strings.Repeat("\n", strings.Count(yours, "\n")), 1)
	}
	type piece struct {
		at, end int    // where in src.Code it replaces text (end = at: inserted)
		text    string // what goes there, marked
	}
	var pieces []piece
	if strings.TrimSpace(rest) != "" {
		pieces = append(pieces, piece{first, first, marked(strings.TrimRight(rest, "\n \t")+"\n\n", 1, file, lineAt(src.Code, first), src.Name)})
	}
	for _, s := range swaps {
		at := strings.Index(src.Code, s.course)
		if at < 0 {
			continue
		}
		end := at + len(s.course)
		pieces = append(pieces, piece{at, end, marked(s.yours, lineAt(code, strings.Index(code, s.yours)), file, lineAt(src.Code, end), src.Name)})
	}
	slices.SortStableFunc(pieces, func(a, b piece) int { return a.at - b.at })
	var b strings.Builder
	from := 0
	for _, p := range pieces {
		b.WriteString(src.Code[from:p.at])
		b.WriteString(p.text)
		from = p.end
	}
	b.WriteString(src.Code[from:])
	return b.String(), true
}

// lineAt is the line, from 1, of text at byte offset at.
func lineAt(text string, at int) int { return 1 + strings.Count(text[:at], "\n") }

// marked is text as lines of file from line, then a directive that
// numbers what follows as lines of course from back: the text that
// followed the replaced code in course, which starts on line back.
func marked(text string, line int, file string, back int, course string) string {
	return fmt.Sprintf("\n#line %d %q\n%s\n#line %d %q\n", line, file, text, back, course)
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

// kernelNames is those of the kernels in file, in its order, that p's
// versions run (only those named in impls, where it names any): a
// version's own kernel, or those a library version launches beside the
// library; all of them where p names none.
func (p *Problem) kernelNames(file, impls []string) []string {
	var out []string
	for _, name := range file {
		for _, im := range p.Impls {
			if len(impls) > 0 && !slices.Contains(impls, im.Name) {
				continue
			}
			if !im.Library && im.Name == name || slices.Contains(im.Kernels, name) {
				out = append(out, name)
				break
			}
		}
	}
	if len(out) == 0 {
		return file
	}
	return out
}

// compileOnly compiles the problem's kernels in replay mode and reports
// them, or says why it cannot.
func compileOnly(env *Env, l *Lesson, p *Problem, impls []string) error {
	if l.Kernels == "" && p.Kernels == "" {
		return nil
	}
	img, src, ok, err := env.CompileHere(l, p.Kernels)
	if !ok {
		return err
	}
	env.printf("Compiled here with NVRTC %s for %s:\n", img.NVRTC, img.Arch)
	names := p.kernelNames(kernels.Names(src), impls)
	width := 16
	for _, name := range names {
		width = max(width, len(name))
	}
	leftOut := map[string][]string{} // arch → the kernels left out for want of it
	var archs []string
	for _, name := range names {
		k, ok := img.Kernel(name)
		if !ok {
			continue
		}
		body, _ := kernels.Function(src, name)
		need := featureArch(body)
		if need == "" || img.Arch == need {
			env.printf("  %-*s %s\n", width, k.Name, resourceLine(k))
			continue
		}
		fa := env.forArch(l, src, name, need, img)
		switch {
		case fa.report != "":
			env.printf("  %-*s %s\n", width, name, fa.report)
		case fa.recorded != "":
			env.printf("  %-*s left out: needs %s; %s\n", width, name, need, fa.recorded)
		default:
			env.printf("  %-*s left out: needs %s\n", width, name, need)
		}
		if fa.report == "" {
			if len(leftOut[need]) == 0 {
				archs = append(archs, need)
			}
			leftOut[need] = append(leftOut[need], name)
		}
	}
	for _, need := range archs {
		env.needsArch(leftOut[need], need, img)
	}
	return nil
}

// archReport is what can be shown of a kernel whose body is compiled
// only for an architecture that this session's kernels are not compiled
// for (featureArch).
type archReport struct {
	report   string // what ptxas reports of it compiled here for that architecture; "" where NVRTC cannot
	recorded string // what Nsight Compute recorded of it on the reference GPU, with the lesson; "" where nothing was
}

// forArch compiles kernel name of src for arch where this machine's NVRTC
// can (an image for another architecture, from, was all the session
// made), and finds what the lesson's recorded profiles say of the kernel:
// its registers and shared memory, as the GPU ran it.
func (e *Env) forArch(l *Lesson, src nvrtc.Source, name, arch string, from *nvrtc.Image) archReport {
	var out archReport
	if canCompile(arch, from.NVRTC) {
		if img, err := nvrtc.Compile(src, nvrtc.CompileOptions{Arch: arch}); err == nil {
			if k, ok := img.Kernel(name); ok {
				out.report = fmt.Sprintf("%s (NVRTC %s, %s)", resourceLine(k), img.NVRTC, img.Arch)
			}
		}
	}
	for _, r := range l.recorded.Results {
		if r.Kind != "profile" {
			continue
		}
		for _, k := range r.Kernels {
			regs, ok := k.Get(profiler.Registers)
			if k.Name != name || !ok {
				continue
			}
			shared, _ := k.Get(profiler.SharedPerBlock)
			out.recorded = fmt.Sprintf("on the %s (%s), Nsight Compute saw %.0f registers/thread and %.0f B of shared memory a block",
				r.GPU, r.Date, regs, shared)
			return out
		}
	}
	return out
}

// canCompile reports whether NVRTC of version v ("11.8") compiles for
// arch: sm_90a, Hopper's own instructions, needs NVRTC 12 or newer.
func canCompile(arch, v string) bool {
	if arch != "sm_90a" {
		return true
	}
	var major int
	_, err := fmt.Sscanf(v, "%d.", &major)
	return err == nil && major >= 12
}

// needsArch says that kernels (left out of img, compiled for another
// architecture) need arch, and what would compile them: in full the first
// time in a session, and in one line after that.
func (e *Env) needsArch(kernels []string, arch string, img *nvrtc.Image) {
	if canCompile(arch, img.NVRTC) {
		return // compiled for arch beside img: forArch showed what it made
	}
	them := strings.Join(kernels, " and ")
	if len(kernels) > 2 {
		them = strings.Join(kernels[:len(kernels)-1], ", ") + " and " + kernels[len(kernels)-1]
	}
	if !e.once("needs " + arch) {
		e.printf("(%s %s %s, which NVRTC %s cannot compile for.)\n", them, Plural(len(kernels), "needs|need"), arch, img.NVRTC)
		return
	}
	e.printf("%s %s %s (%s); NVRTC %s cannot compile for it, so what ptxas makes of %s does not show here.\n",
		them, Plural(len(kernels), "needs|need"), arch, archNames[arch], img.NVRTC, Plural(len(kernels), "it|them"))
	e.printf("NVRTC 12 or newer compiles %s without a GPU: for instance the library of Python's nvidia-cuda-nvrtc wheel "+
		"(pip install nvidia-cuda-nvrtc), with CUDA_PATH set to the folder above the lib/ that holds its libnvrtc.so.\n",
		Plural(len(kernels), "it|them"))
}

// resourceLine is what ptxas reports of a kernel, in one line.
func resourceLine(k nvrtc.KernelResources) string {
	return fmt.Sprintf("%d registers/thread, %d B static shared memory, %d B spilled", k.Registers, k.SharedStatic, k.SpillStores)
}
