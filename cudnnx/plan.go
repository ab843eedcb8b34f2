package cudnnx

import (
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"cudarepl/gpu"
)

// PlanReport says how a graph's plan was found.
type PlanReport struct {
	Graph      string
	Key        string // the cache key: a hash of the graph's shape and the plan choice
	Heuristics string // "mode A" or "fallback"
	Candidates []Candidate
	Chosen     int           // index into Candidates
	Workspace  int64         // bytes the chosen plan needs
	BuildTime  time.Duration // host time spent building now; 0 when Cached
	Cached     bool
}

// Candidate is one engine configuration the heuristics offered.
type Candidate struct {
	Engine    int64  // cuDNN's global engine index
	Err       string // why it did not finalize, or ""
	Workspace int64
	Time      time.Duration // median device time, when autotuned
}

// clone is r with a Candidates slice of its own: a report handed out in
// the process that owns the context must not share the cached plan's.
func (r PlanReport) clone() PlanReport {
	r.Candidates = slices.Clone(r.Candidates)
	return r
}

// ChosenCandidate returns the chosen candidate.
func (r PlanReport) ChosenCandidate() Candidate {
	if r.Chosen < 0 || r.Chosen >= len(r.Candidates) {
		return Candidate{}
	}
	return r.Candidates[r.Chosen]
}

// execOp executes a graph's run on the stream, building its plan first if
// the cache has none: what Graph.Op returns.
type execOp struct{ Run run }

// Name names the graph, and whether its plan is autotuned.
func (op execOp) Name() string {
	what := "cudnn graph " + op.Run.Graph.Name
	if op.Run.Autotune {
		what += " (autotuned)"
	}
	return what
}

// Prepare finds or builds the plan and packs the tensors' memory for it.
func (op execOp) Prepare(x *gpu.Exec) (gpu.Step, error) {
	st, err := stateOf(x)
	if err != nil {
		return gpu.Step{}, err
	}
	p, _, err := st.plan(x, op.Run)
	if err != nil {
		return gpu.Step{}, err
	}
	run, release, err := st.execFunc(p.plan, p.report.Workspace, op.Run)
	if err != nil {
		return gpu.Step{}, err
	}
	step := gpu.Step{Enqueue: run, Release: release, Uses: []gpu.DevicePtr{st.ws}} // the workspace, as execFunc left it
	for _, ptr := range op.Run.Ptrs {
		step.Uses = append(step.Uses, ptr)
	}
	return step, nil
}

// planRequest builds (or finds in the cache) a run's plan without
// executing it, and answers with its PlanReport.
type planRequest struct{ Run run }

func (r planRequest) String() string { return "cuDNN plan of graph " + r.Run.Graph.Name }

func (r planRequest) Serve(x *gpu.Exec) (any, error) {
	st, err := stateOf(x)
	if err != nil {
		return nil, err
	}
	_, rep, err := st.plan(x, r.Run)
	return rep, err
}

// dropPlansRequest empties the plan cache and frees the workspace.
type dropPlansRequest struct{}

func (dropPlansRequest) String() string { return "drop cuDNN's plans" }

func (dropPlansRequest) Serve(x *gpu.Exec) (any, error) {
	st, err := stateOf(x)
	if err != nil {
		return nil, err
	}
	st.dropCache()
	return nil, st.freeWorkspace()
}

func init() {
	gpu.RegisterLibrary(gpu.Library{Name: "cuDNN", Version: Version, Types: []any{
		execOp{}, planRequest{}, dropPlansRequest{}, PlanReport{},
		LegacyConv{}, convAlgosRequest{}, []AlgoReport{}, Softmax{},
	}}) // the graph operations register themselves, each in its file

}

// cudnnState is a context's cuDNN handle, plan cache and workspace.
type cudnnState struct {
	a      *cudnnAPI
	x      *gpu.Exec
	h      uintptr
	plans  map[string]*cudnnPlan
	ws     gpu.DevicePtr
	wsSize int64
}

// cudnnPlan is a finalized plan and every descriptor it was built from.
type cudnnPlan struct {
	plan   *desc
	keep   []*desc
	report PlanReport
}

func (p *cudnnPlan) destroy() {
	for _, d := range p.keep {
		d.destroy()
	}
}

// builder makes the descriptors of one graph node, each kept to be
// destroyed with the plan.
type builder struct {
	a    *cudnnAPI
	what string // the node, for messages
	keep *[]*desc
}

// desc starts a descriptor of type typ.
func (b *builder) desc(typ int32) *desc {
	ds := b.a.newDesc(typ, b.what)
	*b.keep = append(*b.keep, ds)
	return ds
}

// stateKey names the package's state in an Exec.
type stateKey struct{}

// stateOf returns the context's cuDNN state, made on first use.
func stateOf(x *gpu.Exec) (*cudnnState, error) {
	s, err := x.State(stateKey{}, func() (any, error) {
		a, err := loadCUDNN()
		if err != nil {
			return nil, err
		}
		st := &cudnnState{a: a, x: x, plans: map[string]*cudnnPlan{}}
		if err := a.check(a.cudnnCreate(&st.h), "cudnnCreate", ""); err != nil {
			return nil, err
		}
		if err := a.check(a.cudnnSetStream(st.h, x.Stream()), "cudnnSetStream", ""); err != nil {
			a.cudnnDestroy(st.h)
			return nil, err
		}
		return st, nil
	})
	if err != nil {
		return nil, err
	}
	return s.(*cudnnState), nil
}

// Close releases the plans, the workspace and the handle; on the GPU thread.
func (st *cudnnState) Close() error {
	st.dropCache()
	if st.ws != 0 {
		st.x.Free(st.ws)
	}
	st.a.cudnnDestroy(st.h)
	return nil
}

func (st *cudnnState) dropCache() {
	for k, p := range st.plans {
		p.destroy()
		delete(st.plans, k)
	}
}

// freeWorkspace releases the shared workspace, once the work that uses it
// is done, so that the next plan allocates (and a caller can measure) its
// own.
func (st *cudnnState) freeWorkspace() error {
	if st.ws == 0 {
		return nil
	}
	if err := st.x.Sync("cudnn workspace"); err != nil {
		return err
	}
	st.x.Free(st.ws)
	st.ws, st.wsSize = 0, 0
	return nil
}

// workspace returns a workspace of at least n bytes, growing the shared one.
// Work is stream-ordered, so every plan may use the same memory. A
// workspace outgrown is freed once the call is done: an op prepared
// earlier in it may still be waiting to run on it.
func (st *cudnnState) workspace(n int64) (gpu.DevicePtr, error) {
	if n <= st.wsSize {
		return st.ws, nil
	}
	if old := st.ws; old != 0 {
		st.x.AfterCall(func() { st.x.Free(old) })
		st.ws, st.wsSize = 0, 0
	}
	p, err := st.x.Alloc(n, "cuDNN workspace")
	if err != nil {
		return 0, err
	}
	st.ws, st.wsSize = p, n
	return st.ws, nil
}

// cacheKey is a hash of the graph and the plan choice: identical graphs
// (same shapes, types, operations, UIDs) share a plan.
func (r run) cacheKey() string {
	g := r.Graph
	g.Name = ""
	h := sha256.New()
	if err := gob.NewEncoder(h).Encode(struct {
		G         spec
		Autotune  bool
		Candidate int
	}{g, r.Autotune, r.Candidate}); err != nil {
		panic("cudnnx: gob: " + err.Error()) // a spec's operations are all registered
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// plan finds r's plan in the cache or builds it.
func (st *cudnnState) plan(x *gpu.Exec, r run) (*cudnnPlan, PlanReport, error) {
	key := r.cacheKey()
	if p, ok := st.plans[key]; ok && !r.NoCache {
		rep := p.report.clone()
		rep.Cached, rep.BuildTime = true, 0
		return p, rep, nil
	}
	start := time.Now()
	p, err := st.build(x, r)
	if err != nil {
		return nil, PlanReport{}, fmt.Errorf("cudnn graph %s: %w", r.Graph.Name, err)
	}
	p.report.Key, p.report.Graph, p.report.BuildTime = key, r.Graph.Name, time.Since(start)
	if old, ok := st.plans[key]; ok {
		old.destroy()
	}
	st.plans[key] = p
	return p, p.report.clone(), nil
}

// build turns the graph into descriptors, asks the heuristics (mode A, then
// the fallback list) for engine configurations, and finalizes them in order.
func (st *cudnnState) build(x *gpu.Exec, r run) (*cudnnPlan, error) {
	if err := checkGraph(r.Graph); err != nil {
		return nil, err
	}
	a := st.a
	p := &cudnnPlan{}
	fail := func(err error) (*cudnnPlan, error) {
		p.destroy()
		return nil, err
	}
	keep := func(ds *desc) *desc { p.keep = append(p.keep, ds); return ds }

	tensors := map[int64]*desc{}
	for _, t := range r.Graph.Tensors {
		ds := keep(a.newDesc(cdnTensorDesc, "tensor "+t.Name)).
			enum(cdnAttrTensorDataType, cdnTypeDataType, dataTypes[t.Type]).
			int64s(cdnAttrTensorDims, t.Dims...).
			int64s(cdnAttrTensorStrides, t.Strides...).
			int64s(cdnAttrTensorUID, t.UID).
			int64s(cdnAttrTensorAlignment, 16).
			boolean(cdnAttrTensorVirtual, t.Virtual)
		if t.ByValue {
			ds.boolean(cdnAttrTensorByValue, true)
		}
		if err := ds.finalize(); err != nil {
			return fail(err)
		}
		tensors[t.UID] = ds
	}
	var ops []uintptr
	for i, n := range r.Graph.Nodes {
		b := &builder{a: a, what: fmt.Sprintf("node %d (%s)", i, n.Op), keep: &p.keep}
		in := make([]uintptr, len(n.In))
		for j, u := range n.In {
			in[j] = tensors[u].d
		}
		op := n.Op.build(b, in, tensors[n.Out].d, dataTypes[n.Compute])
		if err := op.finalize(); err != nil {
			return fail(err)
		}
		ops = append(ops, op.d)
	}
	graph := keep(a.newDesc(cdnOpGraphDesc, "operation graph")).descs(cdnAttrGraphOps, ops...).handle(cdnAttrGraphHandle, st.h)
	if err := graph.finalize(); err != nil {
		return fail(err)
	}

	want := 1 + r.Candidate // plans that finalize before we stop
	if r.Autotune {
		want = 8
	}
	var plans []*desc
	var cands []Candidate
	var planOf []int // candidate index of each plan
	for _, mode := range []struct {
		v    int32
		name string
	}{{cdnHeurModeA, "mode A"}, {cdnHeurModeFallback, "fallback"}} {
		cfgs, err := st.heuristics(graph, mode.v, &p.keep)
		if err != nil {
			return fail(err)
		}
		p.report.Heuristics = mode.name
		for _, cfg := range cfgs {
			if len(plans) == want {
				break
			}
			c := Candidate{Engine: st.engineIndex(cfg)}
			plan := keep(a.newDesc(cdnPlanDesc, "execution plan")).handle(cdnAttrPlanHandle, st.h).descs(cdnAttrPlanConfig, cfg.d)
			if err := plan.finalize(); err != nil {
				c.Err = err.Error()
			} else {
				var n int64
				a.cudnnBackendGetAttribute(plan.d, cdnAttrPlanWorkspace, cdnTypeInt64, 1, &n, unsafe.Pointer(&c.Workspace))
				plans, planOf = append(plans, plan), append(planOf, len(cands))
			}
			cands = append(cands, c)
		}
		if len(plans) > 0 {
			break
		}
	}
	p.report.Candidates = cands
	if len(plans) == 0 {
		return fail(noEngineError(cands))
	}
	chosen := len(plans) - 1 // the Candidate-th, or the last found if fewer finalized
	if r.Autotune {
		best := time.Duration(math.MaxInt64)
		for i, plan := range plans {
			t, err := st.timePlan(x, plan, cands[planOf[i]].Workspace, r)
			if err != nil {
				cands[planOf[i]].Err = err.Error()
				continue
			}
			cands[planOf[i]].Time = t
			if t < best {
				best, chosen = t, i
			}
		}
		if best == time.Duration(math.MaxInt64) {
			return fail(fmt.Errorf("autotune: every candidate plan failed to run: %s", cands[planOf[0]].Err))
		}
	}
	p.plan = plans[chosen]
	p.report.Chosen, p.report.Workspace = planOf[chosen], cands[planOf[chosen]].Workspace
	return p, nil
}

// heuristics returns the engine configurations the heuristics in mode offer,
// best first. The descriptors are added to keep.
func (st *cudnnState) heuristics(graph *desc, mode int32, keep *[]*desc) ([]*desc, error) {
	a := st.a
	heur := a.newDesc(cdnEngineHeurDesc, "engine heuristics").descs(cdnAttrHeurGraph, graph.d).enum(cdnAttrHeurMode, cdnTypeHeurMode, mode)
	*keep = append(*keep, heur)
	if err := heur.finalize(); err != nil {
		return nil, err
	}
	var n int64
	if err := a.check(a.cudnnBackendGetAttribute(heur.d, cdnAttrHeurResults, cdnTypeDescriptor, 0, &n, nil), "cudnnBackendGetAttribute", "heuristic results count"); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	cfgs := make([]*desc, n)
	ptrs := make([]uintptr, n)
	for i := range cfgs {
		cfgs[i] = a.newDesc(cdnEngineCfgDesc, "engine config")
		*keep = append(*keep, cfgs[i])
		if cfgs[i].err != nil {
			return nil, cfgs[i].err
		}
		ptrs[i] = cfgs[i].d
	}
	var got int64
	if err := a.check(a.cudnnBackendGetAttribute(heur.d, cdnAttrHeurResults, cdnTypeDescriptor, n, &got, unsafe.Pointer(&ptrs[0])), "cudnnBackendGetAttribute", "heuristic results"); err != nil {
		return nil, err
	}
	return cfgs[:got], nil
}

// engineIndex is the global index of cfg's engine, or -1.
func (st *cudnnState) engineIndex(cfg *desc) int64 {
	a := st.a
	eng := a.newDesc(cdnEngineDesc, "engine")
	defer eng.destroy()
	var n, idx int64 = 0, -1
	if eng.err != nil || a.cudnnBackendGetAttribute(cfg.d, cdnAttrCfgEngine, cdnTypeDescriptor, 1, &n, unsafe.Pointer(&eng.d)) != 0 {
		return -1
	}
	if a.cudnnBackendGetAttribute(eng.d, cdnAttrEngineGlobalIndex, cdnTypeInt64, 1, &n, unsafe.Pointer(&idx)) != 0 {
		return -1
	}
	return idx
}

// timePlan is the median device time of plan over a few executions.
func (st *cudnnState) timePlan(x *gpu.Exec, plan *desc, ws int64, r run) (time.Duration, error) {
	exec, done, err := st.execFunc(plan, ws, r)
	if err != nil {
		return 0, err
	}
	defer done()
	ts, err := x.Time("cudnn graph "+r.Graph.Name, exec, 5, 9) // enough warm-up for the clocks to rise
	if err != nil {
		return 0, err
	}
	return gpu.Summarize(ts).Median, nil
}

// execFunc builds the variant pack for r and returns a function that
// executes plan with it, and one that releases the pack.
func (st *cudnnState) execFunc(plan *desc, wsBytes int64, r run) (func() error, func(), error) {
	a := st.a
	ws, err := st.workspace(max(wsBytes, 1))
	if err != nil {
		return nil, nil, err
	}
	var uids []int64
	var ptrs []uintptr
	var pin runtime.Pinner
	for _, t := range r.Graph.Tensors {
		switch {
		case t.Virtual:
			continue
		case t.ByValue:
			v := scalarBytes(t.Type, t.Value)
			pin.Pin(&v[0])
			uids, ptrs = append(uids, t.UID), append(ptrs, uintptr(unsafe.Pointer(&v[0])))
		default:
			p, ok := r.Ptrs[t.UID]
			if !ok {
				return nil, nil, fmt.Errorf("cudnn graph %s: tensor %s (uid %d) has no device memory", r.Graph.Name, t.Name, t.UID)
			}
			uids, ptrs = append(uids, t.UID), append(ptrs, uintptr(p))
		}
	}
	wsp := uintptr(ws)
	pin.Pin(&ptrs[0])
	pin.Pin(&uids[0])
	pack := a.newDesc(cdnVariantPackDesc, "variant pack").
		int64s(cdnAttrPackUIDs, uids...).
		set(cdnAttrPackPointers, cdnTypeVoidPtr, int64(len(ptrs)), unsafe.Pointer(&ptrs[0])).
		set(cdnAttrPackWorkspace, cdnTypeVoidPtr, 1, unsafe.Pointer(&wsp))
	if err := pack.finalize(); err != nil {
		pack.destroy()
		pin.Unpin()
		return nil, nil, err
	}
	exec := func() error {
		return a.check(a.cudnnBackendExecute(st.h, plan.d, pack.d), "cudnnBackendExecute", "graph "+r.Graph.Name)
	}
	return exec, func() { pack.destroy(); pin.Unpin() }, nil
}

// scalarBytes is v as a by-value scalar of type t.
func scalarBytes(t gpu.DType, v float64) []byte {
	b := make([]byte, 8)
	switch t {
	case gpu.FP16:
		*(*uint16)(unsafe.Pointer(&b[0])) = gpu.Float16Bits(float32(v))
	case gpu.BF16:
		*(*uint16)(unsafe.Pointer(&b[0])) = gpu.BFloat16Bits(float32(v))
	case gpu.FP64:
		*(*float64)(unsafe.Pointer(&b[0])) = v
	default:
		*(*float32)(unsafe.Pointer(&b[0])) = float32(v)
	}
	return b
}

// checkGraph catches, before cuDNN does, the mistakes whose cuDNN errors
// say least: unknown operations or modes, missing tensors, bad shapes.
func checkGraph(g spec) error {
	byUID := map[int64]tensorSpec{}
	for _, t := range g.Tensors {
		if _, dup := byUID[t.UID]; dup {
			return fmt.Errorf("two tensors have uid %d", t.UID)
		}
		if _, ok := dataTypes[t.Type]; !ok {
			return fmt.Errorf("tensor %s: cuDNN graphs here take float32, float64, float16, bfloat16 or bool, not %s", t.Name, t.Type)
		}
		if len(t.Dims) == 0 || len(t.Dims) != len(t.Strides) {
			return fmt.Errorf("tensor %s: %d dims and %d strides", t.Name, len(t.Dims), len(t.Strides))
		}
		byUID[t.UID] = t
	}
	if len(g.Nodes) == 0 {
		return errors.New("the graph has no operations")
	}
	for i, n := range g.Nodes {
		if n.Op == nil {
			return fmt.Errorf("node %d: no operation", i)
		}
		if err := n.Op.check(); err != nil {
			return fmt.Errorf("node %d (%s): %w", i, n.Op, err)
		}
		if want := n.Op.operands(); len(n.In) != want {
			return fmt.Errorf("node %d (%s): %d inputs, want %d", i, n.Op, len(n.In), want)
		}
		for _, u := range append(append([]int64{}, n.In...), n.Out) {
			if _, ok := byUID[u]; !ok {
				return fmt.Errorf("node %d (%s): no tensor with uid %d", i, n.Op, u)
			}
		}
		if _, ok := dataTypes[n.Compute]; !ok {
			return fmt.Errorf("node %d (%s): no compute type", i, n.Op)
		}
	}
	return nil
}

// noEngineError says that nothing can run the graph, what was tried, and
// the usual ways out.
func noEngineError(cands []Candidate) error {
	var b strings.Builder
	if len(cands) == 0 {
		b.WriteString("no engine supports this graph: the heuristics (mode A, then fallback) offered no configuration")
	} else {
		fmt.Fprintf(&b, "no engine supports this graph: %d configurations tried", len(cands))
	}
	for i, c := range cands {
		if i == 4 {
			fmt.Fprintf(&b, "; … %d more", len(cands)-4)
			break
		}
		fmt.Fprintf(&b, "; engine %d: %s", c.Engine, c.Err)
	}
	b.WriteString(". Usual fixes: NHWC layout (channels innermost in the strides), fp16 or bf16 data with fp32 compute, channel counts a multiple of 8, beta 0")
	return errors.New(b.String())
}
