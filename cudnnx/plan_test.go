package cudnnx

import (
	"bytes"
	"encoding/gob"
	"fmt"
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

// TestOperationsCrossThePipe: a graph holding every kind of operation
// travels to the worker and back unchanged (each op_*.go registers its
// type with gob).
func TestOperationsCrossThePipe(t *testing.T) {
	g := New("every operation")
	x := g.Tensor("x", gpu.FP16, NHWC(1, 8, 4, 4))
	w := g.Tensor("w", gpu.FP16, NHWC(8, 8, 3, 3))
	g.Relu(g.Conv(x, w, Same(3))).Output(gpu.FP16)
	q, k, v := g.Tensor("q", gpu.FP16, BHSD(1, 1, 4, 8)), g.Tensor("k", gpu.FP16, BHSD(1, 1, 4, 8)), g.Tensor("v", gpu.FP16, BHSD(1, 1, 4, 8))
	g.CausalSDPA(q, k, v, 0.5)
	q2, k2, v2 := g.Tensor("q2", gpu.FP16, BHSD(1, 1, 4, 8)), g.Tensor("k2", gpu.FP16, BHSD(1, 1, 4, 8)), g.Tensor("v2", gpu.FP16, BHSD(1, 1, 4, 8))
	g.SDPA(q2, k2, v2, 0.5)
	sp, err := g.spec()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(run{Graph: sp}); err != nil {
		t.Fatalf("encode: %v", err)
	}
	var back run
	if err := gob.NewDecoder(&buf).Decode(&back); err != nil {
		t.Fatalf("decode: %v", err)
	}
	kinds := map[string]bool{}
	for i, n := range back.Graph.Nodes {
		if n.Op.String() != sp.Nodes[i].Op.String() {
			t.Errorf("node %d came back as %s, want %s", i, n.Op, sp.Nodes[i].Op)
		}
		kinds[fmt.Sprintf("%T", n.Op)] = true
	}
	for _, want := range []string{"cudnnx.convFwd", "cudnnx.pointwise", "cudnnx.matmul", "cudnnx.reduction", "cudnnx.sdpaFwd"} {
		if !kinds[want] {
			t.Errorf("no %s in the graph that came back (%v)", want, kinds)
		}
	}
	if err := checkGraph(back.Graph); err != nil {
		t.Errorf("checkGraph of the graph that came back: %v", err)
	}
}
