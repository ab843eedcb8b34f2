// Package cudnnx builds cuDNN 9 operation graphs in Go, in the spirit of
// cudnn-frontend's Python API: tensors get unique ids by themselves,
// intermediate results are virtual (they never reach global memory) unless
// marked as outputs, and a graph runs as one gpu.Op.
//
//	g := cudnnx.New("conv+bias+relu")
//	x := g.Tensor("x", gpu.FP16, cudnnx.NHWC(32, 64, 112, 112))
//	w := g.Tensor("w", gpu.FP16, cudnnx.NHWC(64, 64, 3, 3))
//	b := g.Tensor("b", gpu.FP16, cudnnx.NHWC(1, 64, 1, 1))
//	y := g.Relu(g.Add(g.Conv(x, w, cudnnx.Same(3)), b)).Output(gpu.FP16)
//	op, err := g.Op(cudnnx.Bind{x: px, w: pw, b: pb, y: py}, cudnnx.Options{})
//
// Building the plan (heuristics, engine configurations, finalizing) happens
// in the process that owns the GPU context (the worker), which also keeps
// the plan cache: a second graph of the same shape reuses the plan. Eval
// computes any graph on the CPU in float64, the reference its results are
// checked against.
//
// Each kind of graph operation is one type in one file (op_conv.go,
// op_pointwise.go, op_matmul.go, op_reduction.go, op_sdpa.go): the Graph
// method that adds it, how many operands it takes, how it becomes a
// backend descriptor, how Eval computes it, and its registration with
// encoding/gob (it crosses to the worker inside a graph). Adding an
// operation is one such file and its test.
//
// The package is cudarepl's one door to cuDNN: besides graphs it runs
// cuDNN's legacy convolution algorithms (LegacyConv, ConvAlgorithms) and
// its softmax (Softmax), all as gpu.Ops. It registers them with
// gpu.RegisterLibrary, so a program whose worker runs cuDNN work imports
// it, as package worker does.
package cudnnx
