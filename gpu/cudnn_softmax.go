package gpu

import (
	"fmt"
	"unsafe"
)

// CudnnSoftmax is a softmax over each row of a rows×cols row-major matrix,
// y = exp(x − max) / Σ exp(x − max), through cuDNN's cudnnSoftmaxForward in
// its accurate mode (the row's maximum subtracted first).
type CudnnSoftmax struct {
	Rows, Cols int
	Type       DType // FP32 or FP16; cuDNN computes in fp32 either way
	X, Y       DevicePtr
}

func (sm CudnnSoftmax) String() string {
	return fmt.Sprintf("softmax %d×%d %s", sm.Rows, sm.Cols, sm.Type)
}

// CudnnSoftmaxOp runs sm on the stream.
func CudnnSoftmaxOp(sm CudnnSoftmax) LibOp {
	return LibOp{Lib: "cudnn", What: "cuDNN " + sm.String(), Data: gobBytes(cudnnRequest{Kind: "softmax", Softmax: sm})}
}

// prepareSoftmax describes sm to cuDNN as rows×cols×1×1 (NCHW), so that
// the softmax over "channels" is one over each row.
func (st *cudnnState) prepareSoftmax(sm CudnnSoftmax) (func() error, func(), error) {
	a := st.a
	if a.cudnnSoftmaxForward == nil {
		return nil, nil, &UnavailableError{Reason: fmt.Sprintf("%s has no cudnnSoftmaxForward", a.lib.Name)}
	}
	if sm.Type != FP32 && sm.Type != FP16 {
		return nil, nil, fmt.Errorf("%s: the softmax here takes float32 or float16", sm)
	}
	if sm.Rows < 1 || sm.Cols < 1 {
		return nil, nil, fmt.Errorf("%s: sizes must be positive", sm)
	}
	var x, y uintptr
	free := func() {
		if x != 0 {
			a.cudnnDestroyTensorDescriptor(x)
		}
		if y != 0 {
			a.cudnnDestroyTensorDescriptor(y)
		}
	}
	dt := cudnnDataTypes[sm.Type]
	for _, c := range []struct {
		name string
		s    func() int32
	}{
		{"cudnnCreateTensorDescriptor", func() int32 { return a.cudnnCreateTensorDescriptor(&x) }},
		{"cudnnCreateTensorDescriptor", func() int32 { return a.cudnnCreateTensorDescriptor(&y) }},
		{"cudnnSetTensor4dDescriptor", func() int32 { return a.cudnnSetTensor4dDescriptor(x, 0, dt, int32(sm.Rows), int32(sm.Cols), 1, 1) }},
		{"cudnnSetTensor4dDescriptor", func() int32 { return a.cudnnSetTensor4dDescriptor(y, 0, dt, int32(sm.Rows), int32(sm.Cols), 1, 1) }},
	} {
		if err := a.check(c.s(), c.name, sm.String()); err != nil {
			free()
			return nil, nil, err
		}
	}
	const accurate, channel = 1, 1 // CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL
	alpha, beta := float32(1), float32(0)
	run := func() error {
		return a.check(a.cudnnSoftmaxForward(st.h, accurate, channel, unsafe.Pointer(&alpha), x, uint64(sm.X), unsafe.Pointer(&beta), y, uint64(sm.Y)),
			"cudnnSoftmaxForward", sm.String())
	}
	return run, free, nil
}
