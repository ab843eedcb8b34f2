package cudnnx

import (
	"fmt"
	"unsafe"

	"cudarepl/gpu"
	"cudarepl/internal/dl"
)

// Softmax is a softmax over each row of a rows×cols row-major matrix,
// y = exp(x − max) / Σ exp(x − max), through cuDNN's cudnnSoftmaxForward in
// its accurate mode (the row's maximum subtracted first), as a gpu.Op.
type Softmax struct {
	Rows, Cols int
	Type       gpu.DType // FP32 or FP16; cuDNN computes in fp32 either way
	X, Y       gpu.DevicePtr
}

func (sm Softmax) String() string {
	return fmt.Sprintf("softmax %d×%d %s", sm.Rows, sm.Cols, sm.Type)
}

// Name is "cuDNN softmax" and the shape.
func (sm Softmax) Name() string { return "cuDNN " + sm.String() }

// Prepare describes sm to cuDNN as rows×cols×1×1 (NCHW), so that the
// softmax over "channels" is one over each row.
func (sm Softmax) Prepare(ex *gpu.Exec) (gpu.Step, error) {
	st, err := stateOf(ex)
	if err != nil {
		return gpu.Step{}, err
	}
	a := st.a
	if a.cudnnSoftmaxForward == nil {
		return gpu.Step{}, &dl.UnavailableError{Reason: fmt.Sprintf("%s has no cudnnSoftmaxForward", a.lib.Name)}
	}
	if sm.Type != gpu.FP32 && sm.Type != gpu.FP16 {
		return gpu.Step{}, fmt.Errorf("%s: the softmax here takes float32 or float16", sm)
	}
	if sm.Rows < 1 || sm.Cols < 1 {
		return gpu.Step{}, fmt.Errorf("%s: sizes must be positive", sm)
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
	dt := dataTypes[sm.Type]
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
			return gpu.Step{}, err
		}
	}
	const accurate, channel = 1, 1 // CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL
	alpha, beta := float32(1), float32(0)
	run := func() error {
		return a.check(a.cudnnSoftmaxForward(st.h, accurate, channel, unsafe.Pointer(&alpha), x, uint64(sm.X), unsafe.Pointer(&beta), y, uint64(sm.Y)),
			"cudnnSoftmaxForward", sm.String())
	}
	return gpu.Step{Enqueue: run, Release: free, Uses: []gpu.DevicePtr{sm.X, sm.Y}}, nil
}
