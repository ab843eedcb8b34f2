package gpu

import (
	"strings"
	"testing"
)

func TestCheckCudnnGraph(t *testing.T) {
	x := CudnnTensor{UID: 1, Name: "x", Type: FP16, Dims: []int64{1, 8, 4, 4}, Strides: []int64{128, 1, 32, 8}}
	w := CudnnTensor{UID: 2, Name: "w", Type: FP16, Dims: []int64{8, 8, 3, 3}, Strides: []int64{72, 1, 24, 8}}
	y := CudnnTensor{UID: 3, Name: "y", Type: FP16, Dims: []int64{1, 8, 4, 4}, Strides: []int64{128, 1, 32, 8}}
	conv := CudnnNode{Op: "conv_fwd", In: []int64{1, 2}, Out: 3, Compute: FP32, Pad: []int64{1, 1}, Stride: []int64{1, 1}, Dilation: []int64{1, 1}}
	ok := CudnnGraph{Name: "ok", Tensors: []CudnnTensor{x, w, y}, Nodes: []CudnnNode{conv}}
	if err := checkCudnnGraph(ok); err != nil {
		t.Fatalf("checkCudnnGraph(conv) = %v", err)
	}
	for _, tc := range []struct {
		edit func(g *CudnnGraph)
		want string
	}{
		{func(g *CudnnGraph) { g.Tensors[1].UID = 1 }, "two tensors have uid 1"},
		{func(g *CudnnGraph) { g.Tensors[0].Type = FP8E4M3 }, "not float8"},
		{func(g *CudnnGraph) { g.Tensors[0].Strides = g.Tensors[0].Strides[:3] }, "4 dims and 3 strides"},
		{func(g *CudnnGraph) { g.Nodes = nil }, "no operations"},
		{func(g *CudnnGraph) { g.Nodes[0].Op = "deconv" }, `no operation "deconv"`},
		{func(g *CudnnGraph) {
			g.Nodes[0] = CudnnNode{Op: "pointwise", Mode: "wiggle", In: []int64{1}, Out: 3, Compute: FP32}
		}, `no pointwise mode "wiggle"`},
		{func(g *CudnnGraph) {
			g.Nodes[0] = CudnnNode{Op: "pointwise", Mode: "add", In: []int64{1}, Out: 3, Compute: FP32}
		}, "1 inputs, want 2"},
		{func(g *CudnnGraph) { g.Nodes[0].In = []int64{1, 9} }, "no tensor with uid 9"},
		{func(g *CudnnGraph) { g.Nodes[0].Pad = []int64{1} }, "one value per spatial dimension"},
		{func(g *CudnnGraph) { g.Nodes[0].Compute = 0 }, "no compute type"},
	} {
		g := ok
		g.Tensors = append([]CudnnTensor{}, ok.Tensors...)
		g.Nodes = append([]CudnnNode{}, ok.Nodes...)
		tc.edit(&g)
		if err := checkCudnnGraph(g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkCudnnGraph = %v, want an error with %q", err, tc.want)
		}
	}
}

func TestNoEngineError(t *testing.T) {
	err := noEngineError(CudnnGraph{}, []CudnnCandidate{{Engine: 3, Err: "CUDNN_STATUS_NOT_SUPPORTED"}})
	for _, want := range []string{"1 configurations tried", "engine 3: CUDNN_STATUS_NOT_SUPPORTED", "NHWC", "multiple of 8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("noEngineError = %q, want %q in it", err, want)
		}
	}
	if err := noEngineError(CudnnGraph{}, nil); !strings.Contains(err.Error(), "offered no configuration") {
		t.Errorf("noEngineError(none) = %q", err)
	}
}

func TestCudnnCacheKey(t *testing.T) {
	g := CudnnGraph{Name: "a", Tensors: []CudnnTensor{{UID: 1, Dims: []int64{2}, Strides: []int64{1}}}}
	r1, r2 := CudnnRun{Graph: g}, CudnnRun{Graph: g}
	r2.Graph.Name = "b" // names do not matter
	if r1.cacheKey() != r2.cacheKey() {
		t.Error("graphs differing only in name have different cache keys")
	}
	r2.Autotune = true
	if r1.cacheKey() == r2.cacheKey() {
		t.Error("autotuned and heuristic plans share a cache key")
	}
	r3 := CudnnRun{Graph: CudnnGraph{Tensors: []CudnnTensor{{UID: 1, Dims: []int64{3}, Strides: []int64{1}}}}}
	if r1.cacheKey() == r3.cacheKey() {
		t.Error("different shapes share a cache key")
	}
}
