package cudnnx

import (
	"strings"
	"testing"

	"cudarepl/gpu"
)

func TestCheckGraph(t *testing.T) {
	x := tensorSpec{UID: 1, Name: "x", Type: gpu.FP16, Dims: []int64{1, 8, 4, 4}, Strides: []int64{128, 1, 32, 8}}
	w := tensorSpec{UID: 2, Name: "w", Type: gpu.FP16, Dims: []int64{8, 8, 3, 3}, Strides: []int64{72, 1, 24, 8}}
	y := tensorSpec{UID: 3, Name: "y", Type: gpu.FP16, Dims: []int64{1, 8, 4, 4}, Strides: []int64{128, 1, 32, 8}}
	conv := node{Op: convFwd{Pad: []int64{1, 1}, Stride: []int64{1, 1}, Dilation: []int64{1, 1}}, In: []int64{1, 2}, Out: 3, Compute: gpu.FP32}
	ok := spec{Name: "ok", Tensors: []tensorSpec{x, w, y}, Nodes: []node{conv}}
	if err := checkGraph(ok); err != nil {
		t.Fatalf("checkGraph(conv) = %v", err)
	}
	for _, tc := range []struct {
		edit func(g *spec)
		want string
	}{
		{func(g *spec) { g.Tensors[1].UID = 1 }, "two tensors have uid 1"},
		{func(g *spec) { g.Tensors[0].Type = gpu.FP8E4M3 }, "not float8"},
		{func(g *spec) { g.Tensors[0].Strides = g.Tensors[0].Strides[:3] }, "4 dims and 3 strides"},
		{func(g *spec) { g.Nodes = nil }, "no operations"},
		{func(g *spec) { g.Nodes[0].Op = nil }, "node 0: no operation"},
		{func(g *spec) {
			g.Nodes[0] = node{Op: pointwise{Mode: "wiggle"}, In: []int64{1}, Out: 3, Compute: gpu.FP32}
		}, `no pointwise mode "wiggle"`},
		{func(g *spec) {
			g.Nodes[0] = node{Op: reduction{Mode: "wiggle"}, In: []int64{1}, Out: 3, Compute: gpu.FP32}
		}, `no reduction mode "wiggle"`},
		{func(g *spec) {
			g.Nodes[0] = node{Op: pointwise{Mode: "add"}, In: []int64{1}, Out: 3, Compute: gpu.FP32}
		}, "1 inputs, want 2"},
		{func(g *spec) {
			g.Nodes[0] = node{Op: sdpaFwd{}, In: []int64{1, 2, 3}, Out: 3, Compute: gpu.FP32}
		}, "3 inputs, want 4"},
		{func(g *spec) { g.Nodes[0].In = []int64{1, 9} }, "no tensor with uid 9"},
		{func(g *spec) {
			g.Nodes[0].Op = convFwd{Pad: []int64{1}, Stride: []int64{1, 1}, Dilation: []int64{1, 1}}
		}, "one value per spatial dimension"},
		{func(g *spec) { g.Nodes[0].Compute = 0 }, "no compute type"},
	} {
		g := ok
		g.Tensors = append([]tensorSpec{}, ok.Tensors...)
		g.Nodes = append([]node{}, ok.Nodes...)
		tc.edit(&g)
		if err := checkGraph(g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkGraph = %v, want an error with %q", err, tc.want)
		}
	}
}

func TestNoEngineError(t *testing.T) {
	err := noEngineError([]Candidate{{Engine: 3, Err: "CUDNN_STATUS_NOT_SUPPORTED"}})
	for _, want := range []string{"1 configurations tried", "engine 3: CUDNN_STATUS_NOT_SUPPORTED", "NHWC", "multiple of 8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("noEngineError = %q, want %q in it", err, want)
		}
	}
	if err := noEngineError(nil); !strings.Contains(err.Error(), "offered no configuration") {
		t.Errorf("noEngineError(none) = %q", err)
	}
}

func TestCacheKey(t *testing.T) {
	g := spec{Name: "a", Tensors: []tensorSpec{{UID: 1, Dims: []int64{2}, Strides: []int64{1}}},
		Nodes: []node{{Op: pointwise{Mode: "relu"}, In: []int64{1}, Out: 1}}}
	r1, r2 := run{Graph: g}, run{Graph: g}
	r2.Graph.Name = "b" // names do not matter
	if r1.cacheKey() != r2.cacheKey() {
		t.Error("graphs differing only in name have different cache keys")
	}
	r2.Autotune = true
	if r1.cacheKey() == r2.cacheKey() {
		t.Error("autotuned and heuristic plans share a cache key")
	}
	r3 := run{Graph: spec{Tensors: []tensorSpec{{UID: 1, Dims: []int64{3}, Strides: []int64{1}}}, Nodes: g.Nodes}}
	if r1.cacheKey() == r3.cacheKey() {
		t.Error("different shapes share a cache key")
	}
	r4 := run{Graph: spec{Tensors: g.Tensors, Nodes: []node{{Op: pointwise{Mode: "exp"}, In: []int64{1}, Out: 1}}}}
	if r1.cacheKey() == r4.cacheKey() {
		t.Error("different operations share a cache key")
	}
}
