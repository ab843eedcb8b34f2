package gpu

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"
	"unsafe"
)

// CudnnGraph is a cuDNN operation graph as plain data: what package cudnnx
// builds, and what the process that owns the context turns into backend
// descriptors, plans and executions (LibOp and CallLibrary "cudnn").
type CudnnGraph struct {
	Name    string
	Tensors []CudnnTensor
	Nodes   []CudnnNode
}

// CudnnTensor is one tensor of a graph. Virtual tensors live only inside
// the fused kernels; by-value tensors are scalars passed with the call.
type CudnnTensor struct {
	UID     int64
	Name    string
	Type    DType
	Dims    []int64
	Strides []int64
	Virtual bool
	ByValue bool
	Value   float64 // the scalar of a by-value tensor
}

// CudnnNode is one operation of a graph.
type CudnnNode struct {
	Op   string // "conv_fwd", "pointwise", "matmul", "reduction" or "sdpa_fwd"
	Mode string // pointwise: "add", "relu", …; reduction: "add", "max", …
	// In are the operands: conv_fwd x, w; pointwise x (and b, and for
	// binary_select the mask t); matmul a, b; reduction x; sdpa_fwd q, k,
	// v and the by-value scale.
	In      []int64
	Out     int64
	Compute DType // the type arithmetic is done in
	// Convolution geometry, one value per spatial dimension.
	Pad, Stride, Dilation []int64
	// Axis is the dimension whose index gen_index writes.
	Axis int64
}

// CudnnPointwiseModes are the pointwise modes a CudnnNode may name, with
// cuDNN's cudnnPointwiseMode_t value and how many inputs each takes.
var CudnnPointwiseModes = map[string]struct{ Value, Inputs int }{
	"add": {0, 2}, "mul": {1, 2}, "min": {2, 2}, "max": {3, 2}, "sub": {9, 2}, "div": {6, 2}, "pow": {8, 2},
	"sqrt": {4, 1}, "abs": {10, 1}, "exp": {13, 1}, "log": {15, 1}, "neg": {16, 1}, "rsqrt": {17, 1},
	"identity": {21, 1}, "reciprocal": {22, 1}, "relu": {100, 1}, "tanh": {101, 1}, "sigmoid": {102, 1},
	"elu": {103, 1}, "gelu": {104, 1}, "softplus": {105, 1}, "swish": {106, 1}, "gelu_tanh": {107, 1},
	// Masks: cmp_ge is x ≥ b as a Bool; gen_index is each element's index
	// along Axis; binary_select is t ? x : b.
	"cmp_ge": {303, 2}, "gen_index": {501, 1}, "binary_select": {601, 3},
}

// CudnnReductionModes are the reduction modes (cudnnReduceTensorOp_t).
var CudnnReductionModes = map[string]int{"add": 0, "mul": 1, "min": 2, "max": 3, "amax": 4, "avg": 5, "norm1": 6, "norm2": 7}

// CudnnRun is one execution of a graph: where its non-virtual tensors live,
// and which plan runs it.
type CudnnRun struct {
	Graph CudnnGraph
	Ptrs  map[int64]DevicePtr // by tensor UID; not for virtual or by-value tensors
	// Autotune times every candidate plan and keeps the fastest; otherwise
	// Candidate picks the n-th configuration of the heuristics that
	// finalizes (0: the heuristics' first choice).
	Autotune  bool
	Candidate int
	// NoCache builds the plan even if an identical graph has one.
	NoCache bool
}

// CudnnPlanReport says how a graph's plan was found.
type CudnnPlanReport struct {
	Graph      string
	Key        string // the cache key: a hash of the graph's shape and the plan choice
	Heuristics string // "mode A" or "fallback"
	Candidates []CudnnCandidate
	Chosen     int           // index into Candidates
	Workspace  int64         // bytes the chosen plan needs
	BuildTime  time.Duration // host time spent building now; 0 when Cached
	Cached     bool
}

// CudnnCandidate is one engine configuration the heuristics offered.
type CudnnCandidate struct {
	Engine    int64  // cuDNN's global engine index
	Err       string // why it did not finalize, or ""
	Workspace int64
	Time      time.Duration // median device time, when autotuned
}

// ChosenCandidate returns the chosen candidate.
func (r CudnnPlanReport) ChosenCandidate() CudnnCandidate {
	if r.Chosen < 0 || r.Chosen >= len(r.Candidates) {
		return CudnnCandidate{}
	}
	return r.Candidates[r.Chosen]
}

// cudnnRequest is what CallLibrary("cudnn", …) carries.
type cudnnRequest struct {
	Kind    string // "plan", "conv_algos", "drop_cache", "run", "conv", "softmax"
	Run     CudnnRun
	Conv    CudnnConv
	Softmax CudnnSoftmax
}

// CudnnPlanCall asks for (building or finding) the plan of r, without
// executing it: the data for Device.CallLibrary("cudnn", …).
func CudnnPlanCall(r CudnnRun) []byte { return gobBytes(cudnnRequest{Kind: "plan", Run: r}) }

// CudnnDropCacheCall empties the plan cache and frees the workspace.
func CudnnDropCacheCall() []byte { return gobBytes(cudnnRequest{Kind: "drop_cache"}) }

// DecodeCudnnPlanReport decodes CallLibrary's answer to CudnnPlanCall.
func DecodeCudnnPlanReport(b []byte) (CudnnPlanReport, error) { return gobDecode[CudnnPlanReport](b) }

// CudnnOp executes r on the stream, building its plan first if the cache
// has none.
func CudnnOp(r CudnnRun) LibOp {
	what := "cudnn graph " + r.Graph.Name
	if r.Autotune {
		what += " (autotuned)"
	}
	return LibOp{Lib: "cudnn", What: what, Data: gobBytes(cudnnRequest{Kind: "run", Run: r})}
}

// gobDecode is the inverse of gobBytes.
func gobDecode[T any](b []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return v, err
}

func gobBytes(v any) []byte {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		panic("gpu: gob: " + err.Error()) // plain structs of basic types always encode
	}
	return b.Bytes()
}

var _ = registerLibrary("cudnn", cudnnLibrary{})

type cudnnLibrary struct{}

// request decodes a cuDNN request and finds (or makes) the context's cuDNN
// state.
func request(lc *LibContext, data []byte) (cudnnRequest, *cudnnState, error) {
	req, err := gobDecode[cudnnRequest](data)
	if err != nil {
		return req, nil, fmt.Errorf("gpu: cudnn: bad request: %w", err)
	}
	st, err := cudnnStateOf(lc)
	return req, st, err
}

func (cudnnLibrary) Prepare(lc *LibContext, data []byte) (func() error, func(), error) {
	req, st, err := request(lc, data)
	if err != nil {
		return nil, nil, err
	}
	switch req.Kind {
	case "run":
		p, _, err := st.plan(lc, req.Run)
		if err != nil {
			return nil, nil, err
		}
		return st.execFunc(p.plan, p.report.Workspace, req.Run)
	case "conv":
		return st.prepareConv(req.Conv)
	case "softmax":
		return st.prepareSoftmax(req.Softmax)
	}
	return nil, nil, fmt.Errorf("gpu: cudnn: no stream work %q", req.Kind)
}

func (cudnnLibrary) Call(lc *LibContext, data []byte) ([]byte, error) {
	req, st, err := request(lc, data)
	if err != nil {
		return nil, err
	}
	switch req.Kind {
	case "plan":
		_, rep, err := st.plan(lc, req.Run)
		if err != nil {
			return nil, err
		}
		return gobBytes(rep), nil
	case "drop_cache":
		st.dropCache()
		return nil, st.freeWorkspace()
	case "conv_algos":
		algos, err := st.convAlgos(lc, req.Conv)
		if err != nil {
			return nil, err
		}
		return gobBytes(algos), nil
	}
	return nil, fmt.Errorf("gpu: cudnn: unknown call %q", req.Kind)
}

// cudnnState is a context's cuDNN handle, plan cache and workspace.
type cudnnState struct {
	a      *cudnnAPI
	c      *Context
	h      uintptr
	plans  map[string]*cudnnPlan
	ws     DevicePtr
	wsSize int64
}

// cudnnPlan is a finalized plan and every descriptor it was built from.
type cudnnPlan struct {
	plan   *desc
	keep   []*desc
	report CudnnPlanReport
}

func (p *cudnnPlan) destroy() {
	for _, d := range p.keep {
		d.destroy()
	}
}

func cudnnStateOf(lc *LibContext) (*cudnnState, error) {
	s, err := lc.State(func() (any, error) {
		a, err := loadCUDNN()
		if err != nil {
			return nil, err
		}
		st := &cudnnState{a: a, c: lc.c, plans: map[string]*cudnnPlan{}}
		if err := a.check(a.cudnnCreate(&st.h), "cudnnCreate", ""); err != nil {
			return nil, err
		}
		if err := a.check(a.cudnnSetStream(st.h, lc.Stream()), "cudnnSetStream", ""); err != nil {
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
		st.c.d.cuMemFree(uint64(st.ws))
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
	if err := st.c.sync("cudnn workspace"); err != nil {
		return err
	}
	st.c.d.cuMemFree(uint64(st.ws))
	st.ws, st.wsSize = 0, 0
	return nil
}

// workspace returns a workspace of at least n bytes, growing the shared one.
// Work is stream-ordered, so every plan may use the same memory.
func (st *cudnnState) workspace(n int64) (DevicePtr, error) {
	if n <= st.wsSize {
		return st.ws, nil
	}
	if err := st.freeWorkspace(); err != nil {
		return 0, err
	}
	var p uint64
	if err := st.c.d.check(st.c.d.cuMemAlloc(&p, uint64(n)), "cuMemAlloc_v2", fmt.Sprintf("cuDNN workspace of %d bytes", n)); err != nil {
		return 0, err
	}
	st.ws, st.wsSize = DevicePtr(p), n
	return st.ws, nil
}

// cacheKey is a hash of the graph and the plan choice: identical graphs
// (same shapes, types, operations, UIDs) share a plan.
func (r CudnnRun) cacheKey() string {
	g := r.Graph
	g.Name = ""
	h := sha256.Sum256(gobBytes(struct {
		G         CudnnGraph
		Autotune  bool
		Candidate int
	}{g, r.Autotune, r.Candidate}))
	return hex.EncodeToString(h[:8])
}

// plan finds r's plan in the cache or builds it.
func (st *cudnnState) plan(lc *LibContext, r CudnnRun) (*cudnnPlan, CudnnPlanReport, error) {
	key := r.cacheKey()
	if p, ok := st.plans[key]; ok && !r.NoCache {
		rep := p.report
		rep.Cached, rep.BuildTime = true, 0
		return p, rep, nil
	}
	start := time.Now()
	p, err := st.build(lc, r)
	if err != nil {
		return nil, CudnnPlanReport{}, fmt.Errorf("cudnn graph %s: %w", r.Graph.Name, err)
	}
	p.report.Key, p.report.Graph, p.report.BuildTime = key, r.Graph.Name, time.Since(start)
	if old, ok := st.plans[key]; ok {
		old.destroy()
	}
	st.plans[key] = p
	return p, p.report, nil
}

// build turns the graph into descriptors, asks the heuristics (mode A, then
// the fallback list) for engine configurations, and finalizes them in order.
func (st *cudnnState) build(lc *LibContext, r CudnnRun) (*cudnnPlan, error) {
	if err := checkCudnnGraph(r.Graph); err != nil {
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
			enum(cdnAttrTensorDataType, cdnTypeDataType, cudnnDataTypes[t.Type]).
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
		what := fmt.Sprintf("node %d (%s %s)", i, n.Op, n.Mode)
		comp := cudnnDataTypes[n.Compute]
		in := func(j int) uintptr { return tensors[n.In[j]].d }
		var op *desc
		switch n.Op {
		case "conv_fwd":
			cd := keep(a.newDesc(cdnConvolutionDesc, what)).
				enum(cdnAttrConvCompType, cdnTypeDataType, comp).
				enum(cdnAttrConvMode, cdnTypeConvMode, cdnCrossCorrelation).
				int64s(cdnAttrConvSpatialDims, int64(len(n.Pad))).
				int64s(cdnAttrConvDilations, n.Dilation...).
				int64s(cdnAttrConvStrides, n.Stride...).
				int64s(cdnAttrConvPrePad, n.Pad...).
				int64s(cdnAttrConvPostPad, n.Pad...)
			if err := cd.finalize(); err != nil {
				return fail(err)
			}
			op = keep(a.newDesc(cdnOpConvFwdDesc, what)).
				descs(cdnAttrConvFwdX, in(0)).descs(cdnAttrConvFwdW, in(1)).descs(cdnAttrConvFwdY, tensors[n.Out].d).
				descs(cdnAttrConvFwdDesc, cd.d).float(cdnAttrConvFwdAlpha, 1).float(cdnAttrConvFwdBeta, 0)
		case "pointwise":
			pd := keep(a.newDesc(cdnPointwiseDesc, what)).
				enum(cdnAttrPointwiseMode, cdnTypePointwise, int32(CudnnPointwiseModes[n.Mode].Value)).
				enum(cdnAttrPointwiseMathPrec, cdnTypeDataType, comp)
			if n.Mode == "gen_index" {
				pd.int64s(cdnAttrPointwiseAxis, n.Axis)
			}
			if err := pd.finalize(); err != nil {
				return fail(err)
			}
			op = keep(a.newDesc(cdnOpPointwiseDesc, what)).descs(cdnAttrPwDesc, pd.d).descs(cdnAttrPwX, in(0))
			if len(n.In) > 1 {
				op.descs(cdnAttrPwB, in(1))
			}
			if len(n.In) > 2 {
				op.descs(cdnAttrPwT, in(2))
			}
			op.descs(cdnAttrPwY, tensors[n.Out].d)
		case "matmul":
			md := keep(a.newDesc(cdnMatmulDesc, what)).enum(cdnAttrMatmulCompType, cdnTypeDataType, comp)
			if err := md.finalize(); err != nil {
				return fail(err)
			}
			op = keep(a.newDesc(cdnOpMatmulDesc, what)).descs(cdnAttrMatmulA, in(0)).descs(cdnAttrMatmulB, in(1)).
				descs(cdnAttrMatmulC, tensors[n.Out].d).descs(cdnAttrMatmulDesc, md.d)
		case "reduction":
			rd := keep(a.newDesc(cdnReductionDesc, what)).
				enum(cdnAttrReductionOperator, cdnTypeReduceOp, int32(CudnnReductionModes[n.Mode])).
				enum(cdnAttrReductionCompType, cdnTypeDataType, comp)
			if err := rd.finalize(); err != nil {
				return fail(err)
			}
			op = keep(a.newDesc(cdnOpReductionDesc, what)).descs(cdnAttrOpReductionX, in(0)).
				descs(cdnAttrOpReductionY, tensors[n.Out].d).descs(cdnAttrOpReductionDesc, rd.d)
		case "sdpa_fwd":
			// cuDNN 9.13's unified attention operation: softmax(scale·q·kᵀ)·v
			// in one node, which its engines run as one fused kernel.
			op = keep(a.newDesc(cdnOpSDPAFwdDesc, what)).descs(cdnAttrSDPAFwdQ, in(0)).descs(cdnAttrSDPAFwdK, in(1)).
				descs(cdnAttrSDPAFwdV, in(2)).descs(cdnAttrSDPAFwdScale, in(3)).descs(cdnAttrSDPAFwdO, tensors[n.Out].d)
		}
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
	var cands []CudnnCandidate
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
			c := CudnnCandidate{Engine: st.engineIndex(cfg)}
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
		return fail(noEngineError(r.Graph, cands))
	}
	chosen := len(plans) - 1 // the Candidate-th, or the last found if fewer finalized
	if r.Autotune {
		best := time.Duration(math.MaxInt64)
		for i, plan := range plans {
			t, err := st.timePlan(lc, plan, cands[planOf[i]].Workspace, r)
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
func (st *cudnnState) timePlan(lc *LibContext, plan *desc, ws int64, r CudnnRun) (time.Duration, error) {
	run, done, err := st.execFunc(plan, ws, r)
	if err != nil {
		return 0, err
	}
	defer done()
	ts, err := lc.Time(run, 5, 9) // enough warm-up for the clocks to rise
	if err != nil {
		return 0, err
	}
	return Summarize(ts).Median, nil
}

// execFunc builds the variant pack for r and returns a function that
// executes plan with it, and one that releases the pack.
func (st *cudnnState) execFunc(plan *desc, wsBytes int64, r CudnnRun) (func() error, func(), error) {
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
	run := func() error {
		return a.check(a.cudnnBackendExecute(st.h, plan.d, pack.d), "cudnnBackendExecute", "graph "+r.Graph.Name)
	}
	return run, func() { pack.destroy(); pin.Unpin() }, nil
}

// scalarBytes is v as a by-value scalar of type t.
func scalarBytes(t DType, v float64) []byte {
	b := make([]byte, 8)
	switch t {
	case FP16:
		*(*uint16)(unsafe.Pointer(&b[0])) = Float16Bits(float32(v))
	case BF16:
		*(*uint16)(unsafe.Pointer(&b[0])) = BFloat16Bits(float32(v))
	case FP64:
		*(*float64)(unsafe.Pointer(&b[0])) = v
	default:
		*(*float32)(unsafe.Pointer(&b[0])) = float32(v)
	}
	return b
}

// checkCudnnGraph catches, before cuDNN does, the mistakes whose cuDNN
// errors say least: unknown ops or modes, missing tensors, bad shapes.
func checkCudnnGraph(g CudnnGraph) error {
	byUID := map[int64]CudnnTensor{}
	for _, t := range g.Tensors {
		if _, dup := byUID[t.UID]; dup {
			return fmt.Errorf("two tensors have uid %d", t.UID)
		}
		if _, ok := cudnnDataTypes[t.Type]; !ok {
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
		ins := map[string]int{"conv_fwd": 2, "matmul": 2, "reduction": 1, "sdpa_fwd": 4}
		want, ok := ins[n.Op]
		switch {
		case n.Op == "pointwise":
			m, ok := CudnnPointwiseModes[n.Mode]
			if !ok {
				return fmt.Errorf("node %d: no pointwise mode %q", i, n.Mode)
			}
			want = m.Inputs
		case n.Op == "reduction":
			if _, ok := CudnnReductionModes[n.Mode]; !ok {
				return fmt.Errorf("node %d: no reduction mode %q", i, n.Mode)
			}
		case !ok:
			return fmt.Errorf("node %d: no operation %q (have conv_fwd, pointwise, matmul, reduction, sdpa_fwd)", i, n.Op)
		}
		if len(n.In) != want {
			return fmt.Errorf("node %d (%s %s): %d inputs, want %d", i, n.Op, n.Mode, len(n.In), want)
		}
		for _, u := range append(append([]int64{}, n.In...), n.Out) {
			if _, ok := byUID[u]; !ok {
				return fmt.Errorf("node %d (%s %s): no tensor with uid %d", i, n.Op, n.Mode, u)
			}
		}
		if _, ok := cudnnDataTypes[n.Compute]; !ok {
			return fmt.Errorf("node %d (%s %s): no compute type", i, n.Op, n.Mode)
		}
		if n.Op == "conv_fwd" && (len(n.Pad) == 0 || len(n.Pad) != len(n.Stride) || len(n.Pad) != len(n.Dilation)) {
			return fmt.Errorf("node %d (conv_fwd): padding, stride and dilation need one value per spatial dimension", i)
		}
	}
	return nil
}

// noEngineError says that nothing can run the graph, what was tried, and
// the usual ways out.
func noEngineError(g CudnnGraph, cands []CudnnCandidate) error {
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
