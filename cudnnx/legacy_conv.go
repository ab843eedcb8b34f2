package cudnnx

import (
	"fmt"
	"time"
	"unsafe"

	"cudarepl/gpu"
)

// LegacyConv is one 2-D convolution, y = conv(x, w), through cuDNN's legacy
// API with algorithm Algo, as a gpu.Op: x is N×C×H×W, w is K×C×R×S, y is
// N×K×P×Q, stored NCHW (w: KCRS) or NHWC (w: KRSC). The legacy API asks
// for an algorithm by name, which is what lesson 10 compares.
type LegacyConv struct {
	N, C, H, W, K, R, S int
	Pad, Stride         int
	Type                gpu.DType // FP32 (the fp32 units, or TF32 tensor cores with TF32) or FP16 (tensor cores, fp32 accumulate)
	// TF32, for FP32, lets cuDNN round the inputs to TF32 and use the
	// tensor cores (CUDNN_DEFAULT_MATH, as the graph API may); without it
	// an fp32 convolution stays on the fp32 units (CUDNN_FMA_MATH).
	TF32     bool
	NHWC     bool
	X, Wt, Y gpu.DevicePtr
	Algo     int // cudnnConvolutionFwdAlgo_t, an index of LegacyConvAlgos
}

// OutHW is the output's height and width.
func (cv LegacyConv) OutHW() (p, q int) {
	return (cv.H+2*cv.Pad-cv.R)/cv.Stride + 1, (cv.W+2*cv.Pad-cv.S)/cv.Stride + 1
}

func (cv LegacyConv) String() string {
	layout := "NCHW"
	if cv.NHWC {
		layout = "NHWC"
	}
	math := ""
	if cv.Type == gpu.FP32 && cv.TF32 {
		math = " (TF32 allowed)"
	}
	return fmt.Sprintf("conv %dx%dx%dx%d→%d %dx%d %s %s%s", cv.N, cv.C, cv.H, cv.W, cv.K, cv.R, cv.S, layout, cv.Type, math)
}

// Name is the convolution and its algorithm.
func (cv LegacyConv) Name() string { return fmt.Sprintf("%s (%s)", cv, algoName(cv.Algo)) }

// Prepare describes the convolution to cuDNN and finds its algorithm's
// workspace.
func (cv LegacyConv) Prepare(x *gpu.Exec) (gpu.Step, error) {
	st, err := stateOf(x)
	if err != nil {
		return gpu.Step{}, err
	}
	d, err := st.convDescriptors(cv)
	if err != nil {
		return gpu.Step{}, err
	}
	run, _, err := st.convFunc(d, cv, cv.Algo)
	if err != nil {
		d.destroy()
		return gpu.Step{}, err
	}
	return gpu.Step{Enqueue: run, Release: d.destroy, Uses: []gpu.DevicePtr{cv.X, cv.Wt, cv.Y, st.ws}}, nil
}

// LegacyConvAlgos names cudnnConvolutionFwdAlgo_t's values in order.
var LegacyConvAlgos = []string{"implicit GEMM", "implicit precomputed GEMM", "GEMM", "direct", "FFT", "FFT tiling", "Winograd", "Winograd non-fused"}

// AlgoReport is how one legacy algorithm did on one convolution.
type AlgoReport struct {
	Algo      int
	Name      string
	Time      time.Duration // median device time; 0 when it did not run
	Workspace int64
	Status    string // "ok", or cuDNN's reason
}

// ConvAlgorithms times each legacy forward-convolution algorithm on cv,
// on dev.
func ConvAlgorithms(dev gpu.Device, cv LegacyConv) ([]AlgoReport, error) {
	v, err := dev.Call(convAlgosRequest{cv})
	out, _ := v.([]AlgoReport)
	return out, err
}

// convAlgosRequest times every legacy algorithm on a convolution.
type convAlgosRequest struct{ Conv LegacyConv }

func (r convAlgosRequest) String() string { return "cuDNN's algorithms on " + r.Conv.String() }

func (r convAlgosRequest) Serve(x *gpu.Exec) (any, error) {
	st, err := stateOf(x)
	if err != nil {
		return nil, err
	}
	return st.convAlgos(x, r.Conv)
}

func algoName(a int) string {
	if a >= 0 && a < len(LegacyConvAlgos) {
		return LegacyConvAlgos[a]
	}
	return fmt.Sprintf("algorithm %d", a)
}

// maxConvWorkspace caps what an algorithm may ask for; FFT can want GiBs.
const maxConvWorkspace = 4 << 30

// convDescs are the legacy descriptors of one convolution.
type convDescs struct {
	a          *cudnnAPI
	x, y, conv uintptr
	w          uintptr
}

func (st *cudnnState) convDescriptors(cv LegacyConv) (*convDescs, error) {
	a := st.a
	dt, ok := dataTypes[cv.Type]
	if !ok || cv.Type == gpu.FP64 || cv.Type == gpu.BF16 || cv.Type == gpu.Bool {
		return nil, fmt.Errorf("%s: the legacy convolution here takes float32 or float16", cv)
	}
	if cv.N < 1 || cv.C < 1 || cv.H < 1 || cv.W < 1 || cv.K < 1 || cv.R < 1 || cv.S < 1 || cv.Stride < 1 || cv.Pad < 0 {
		return nil, fmt.Errorf("%s: sizes must be positive", cv)
	}
	p, q := cv.OutHW()
	if p < 1 || q < 1 {
		return nil, fmt.Errorf("%s: the filter is larger than the padded input", cv)
	}
	format := int32(0) // CUDNN_TENSOR_NCHW
	if cv.NHWC {
		format = 1
	}
	d := &convDescs{a: a}
	calls := []struct {
		name string
		s    int32
	}{
		{"cudnnCreateTensorDescriptor", a.cudnnCreateTensorDescriptor(&d.x)},
		{"cudnnCreateTensorDescriptor", a.cudnnCreateTensorDescriptor(&d.y)},
		{"cudnnCreateFilterDescriptor", a.cudnnCreateFilterDescriptor(&d.w)},
		{"cudnnCreateConvolutionDescriptor", a.cudnnCreateConvolutionDescriptor(&d.conv)},
	}
	for _, c := range calls {
		if err := a.check(c.s, c.name, cv.String()); err != nil {
			d.destroy()
			return nil, err
		}
	}
	// fp32 stays on the fp32 units (FMA math) unless TF32 is allowed;
	// fp16 may use tensor cores.
	math := int32(3) // CUDNN_FMA_MATH
	switch {
	case cv.Type == gpu.FP16:
		math = 1 // CUDNN_TENSOR_OP_MATH
	case cv.TF32:
		math = 0 // CUDNN_DEFAULT_MATH: on Ampere and newer, TF32 tensor-core math is permitted
	}
	const computeFloat = 0
	calls = []struct {
		name string
		s    int32
	}{
		{"cudnnSetTensor4dDescriptor", a.cudnnSetTensor4dDescriptor(d.x, format, dt, int32(cv.N), int32(cv.C), int32(cv.H), int32(cv.W))},
		{"cudnnSetTensor4dDescriptor", a.cudnnSetTensor4dDescriptor(d.y, format, dt, int32(cv.N), int32(cv.K), int32(p), int32(q))},
		{"cudnnSetFilter4dDescriptor", a.cudnnSetFilter4dDescriptor(d.w, dt, format, int32(cv.K), int32(cv.C), int32(cv.R), int32(cv.S))},
		{"cudnnSetConvolution2dDescriptor", a.cudnnSetConvolution2dDescriptor(d.conv, int32(cv.Pad), int32(cv.Pad), int32(cv.Stride), int32(cv.Stride), 1, 1, cdnCrossCorrelation, computeFloat)},
		{"cudnnSetConvolutionMathType", a.cudnnSetConvolutionMathType(d.conv, math)},
	}
	for _, c := range calls {
		if err := a.check(c.s, c.name, cv.String()); err != nil {
			d.destroy()
			return nil, err
		}
	}
	return d, nil
}

func (d *convDescs) destroy() {
	if d.x != 0 {
		d.a.cudnnDestroyTensorDescriptor(d.x)
	}
	if d.y != 0 {
		d.a.cudnnDestroyTensorDescriptor(d.y)
	}
	if d.w != 0 {
		d.a.cudnnDestroyFilterDescriptor(d.w)
	}
	if d.conv != 0 {
		d.a.cudnnDestroyConvolutionDescriptor(d.conv)
	}
}

// convFunc returns a function enqueueing cv with algo, its workspace
// prepared, or why the algorithm cannot run it.
func (st *cudnnState) convFunc(d *convDescs, cv LegacyConv, algo int) (func() error, int64, error) {
	a := st.a
	var wsBytes uint64
	if err := a.check(a.cudnnGetConvolutionForwardWorkspaceSize(st.h, d.x, d.w, d.conv, d.y, int32(algo), &wsBytes),
		"cudnnGetConvolutionForwardWorkspaceSize", fmt.Sprintf("%s, %s", cv, algoName(algo))); err != nil {
		return nil, 0, err
	}
	if wsBytes > maxConvWorkspace {
		return nil, int64(wsBytes), fmt.Errorf("%s: %s wants %d MiB of workspace, more than the %d MiB allowed here", cv, algoName(algo), wsBytes>>20, maxConvWorkspace>>20)
	}
	ws, err := st.workspace(max(int64(wsBytes), 1))
	if err != nil {
		return nil, int64(wsBytes), err
	}
	alpha, beta := float32(1), float32(0)
	run := func() error {
		return a.check(a.cudnnConvolutionForward(st.h, unsafe.Pointer(&alpha), d.x, uint64(cv.X), d.w, uint64(cv.Wt), d.conv, int32(algo),
			uint64(ws), wsBytes, unsafe.Pointer(&beta), d.y, uint64(cv.Y)), "cudnnConvolutionForward", fmt.Sprintf("%s, %s", cv, algoName(algo)))
	}
	return run, int64(wsBytes), nil
}

// convAlgos times every legacy algorithm on cv.
func (st *cudnnState) convAlgos(x *gpu.Exec, cv LegacyConv) ([]AlgoReport, error) {
	d, err := st.convDescriptors(cv)
	if err != nil {
		return nil, err
	}
	defer d.destroy()
	var out []AlgoReport
	for algo := range LegacyConvAlgos {
		r := AlgoReport{Algo: algo, Name: algoName(algo), Status: "ok"}
		run, ws, err := st.convFunc(d, cv, algo)
		r.Workspace = ws
		if err == nil {
			var ts []time.Duration
			// Warmed up and timed as an autotuned graph's candidates are
			// (timePlan), so that the two can stand in one table.
			if ts, err = x.Time(cv.String(), run, 5, 9); err == nil {
				r.Time = gpu.Summarize(ts).Median
			}
		}
		if err != nil {
			r.Status = err.Error()
			if ce, ok := err.(*gpu.CUDAError); ok {
				r.Status = ce.Name
				if ce.Sticky() {
					return nil, err
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}
