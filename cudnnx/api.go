package cudnnx

import (
	"fmt"
	"sync"
	"unsafe"

	"cudarepl/gpu"
	"cudarepl/internal/dl"
)

// cudnnAPI holds the cuDNN 9 entry points: the backend (graph) API and the
// legacy convolution calls, bound from libcudnn.so.9 at run time, so that
// building needs no cuDNN header. Enum values below are cuDNN's own, from
// cudnn_graph.h, cudnn_ops.h and cudnn_cnn.h of cuDNN 9.14.
// See https://docs.nvidia.com/deeplearning/cudnn/backend/latest/.
type cudnnAPI struct {
	lib     *dl.Library
	version int // e.g. 91400

	cudnnGetVersion         func() uint64
	cudnnGetErrorString     func(s int32) *byte
	cudnnGetLastErrorString func(msg *byte, max uint64)
	cudnnCreate             func(h *uintptr) int32
	cudnnDestroy            func(h uintptr) int32
	cudnnSetStream          func(h, s uintptr) int32

	cudnnBackendCreateDescriptor  func(typ int32, d *uintptr) int32
	cudnnBackendDestroyDescriptor func(d uintptr) int32
	cudnnBackendFinalize          func(d uintptr) int32
	cudnnBackendSetAttribute      func(d uintptr, name, typ int32, count int64, arr unsafe.Pointer) int32
	cudnnBackendGetAttribute      func(d uintptr, name, typ int32, requested int64, count *int64, arr unsafe.Pointer) int32
	cudnnBackendExecute           func(h, plan, pack uintptr) int32

	cudnnCreateTensorDescriptor             func(d *uintptr) int32
	cudnnSetTensor4dDescriptor              func(d uintptr, format, dtype, n, c, h, w int32) int32
	cudnnDestroyTensorDescriptor            func(d uintptr) int32
	cudnnCreateFilterDescriptor             func(d *uintptr) int32
	cudnnSetFilter4dDescriptor              func(d uintptr, dtype, format, k, c, h, w int32) int32
	cudnnDestroyFilterDescriptor            func(d uintptr) int32
	cudnnCreateConvolutionDescriptor        func(d *uintptr) int32
	cudnnSetConvolution2dDescriptor         func(d uintptr, padH, padW, u, v, dilH, dilW, mode, compute int32) int32
	cudnnSetConvolutionMathType             func(d uintptr, math int32) int32
	cudnnDestroyConvolutionDescriptor       func(d uintptr) int32
	cudnnGetConvolutionForwardWorkspaceSize func(h, x, w, conv, y uintptr, algo int32, size *uint64) int32
	cudnnConvolutionForward                 func(h uintptr, alpha unsafe.Pointer, x uintptr, xp uint64, w uintptr, wp uint64, conv uintptr, algo int32, ws uint64, wsSize uint64, beta unsafe.Pointer, y uintptr, yp uint64) int32
	cudnnSoftmaxForward                     func(h uintptr, algo, mode int32, alpha unsafe.Pointer, x uintptr, xp uint64, beta unsafe.Pointer, y uintptr, yp uint64) int32 // nil where cuDNN has dropped it
}

var loadCUDNN = sync.OnceValues(func() (*cudnnAPI, error) {
	lib, err := dl.Open("cudnn", "cuDNN 9 not found", "install cuDNN 9 (libcudnn9-cuda-12 or -13) or put libcudnn.so.9 on LD_LIBRARY_PATH",
		"libcudnn.so.9", "libcudnn.so", "cudnn64_9.dll")
	if err != nil {
		return nil, err
	}
	a := &cudnnAPI{lib: lib}
	err = lib.Bind(map[string]any{
		"cudnnGetVersion":                         &a.cudnnGetVersion,
		"cudnnGetErrorString":                     &a.cudnnGetErrorString,
		"cudnnGetLastErrorString":                 &a.cudnnGetLastErrorString,
		"cudnnCreate":                             &a.cudnnCreate,
		"cudnnDestroy":                            &a.cudnnDestroy,
		"cudnnSetStream":                          &a.cudnnSetStream,
		"cudnnBackendCreateDescriptor":            &a.cudnnBackendCreateDescriptor,
		"cudnnBackendDestroyDescriptor":           &a.cudnnBackendDestroyDescriptor,
		"cudnnBackendFinalize":                    &a.cudnnBackendFinalize,
		"cudnnBackendSetAttribute":                &a.cudnnBackendSetAttribute,
		"cudnnBackendGetAttribute":                &a.cudnnBackendGetAttribute,
		"cudnnBackendExecute":                     &a.cudnnBackendExecute,
		"cudnnCreateTensorDescriptor":             &a.cudnnCreateTensorDescriptor,
		"cudnnSetTensor4dDescriptor":              &a.cudnnSetTensor4dDescriptor,
		"cudnnDestroyTensorDescriptor":            &a.cudnnDestroyTensorDescriptor,
		"cudnnCreateFilterDescriptor":             &a.cudnnCreateFilterDescriptor,
		"cudnnSetFilter4dDescriptor":              &a.cudnnSetFilter4dDescriptor,
		"cudnnDestroyFilterDescriptor":            &a.cudnnDestroyFilterDescriptor,
		"cudnnCreateConvolutionDescriptor":        &a.cudnnCreateConvolutionDescriptor,
		"cudnnSetConvolution2dDescriptor":         &a.cudnnSetConvolution2dDescriptor,
		"cudnnSetConvolutionMathType":             &a.cudnnSetConvolutionMathType,
		"cudnnDestroyConvolutionDescriptor":       &a.cudnnDestroyConvolutionDescriptor,
		"cudnnGetConvolutionForwardWorkspaceSize": &a.cudnnGetConvolutionForwardWorkspaceSize,
		"cudnnConvolutionForward":                 &a.cudnnConvolutionForward,
		"cudnnSoftmaxForward":                     &a.cudnnSoftmaxForward,
	}, "cudnnSoftmaxForward")
	if err != nil {
		return nil, err
	}
	a.version = int(a.cudnnGetVersion())
	if a.version < 90000 {
		return nil, &dl.UnavailableError{Reason: fmt.Sprintf("%s is cuDNN %d; cudarepl needs cuDNN 9", lib.Name, a.version)}
	}
	return a, nil
})

// Version returns the version of the cuDNN that graphs run on, e.g.
// "9.14.0", or the *dl.UnavailableError that says why it cannot be loaded.
func Version() (string, error) {
	a, err := loadCUDNN()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d.%d.%d", a.version/10000, a.version/100%100, a.version%100), nil
}

// check turns a cudnnStatus_t into a *CUDAError naming the call, the status
// and cuDNN's last-error string.
func (a *cudnnAPI) check(s int32, call, detail string) error {
	if s == 0 {
		return nil
	}
	buf := make([]byte, 1024)
	a.cudnnGetLastErrorString(&buf[0], uint64(len(buf)))
	return &gpu.CUDAError{Call: call, Detail: detail, Code: int(s), Name: dl.GoString(a.cudnnGetErrorString(s)), Msg: dl.GoString(&buf[0])}
}

// Backend descriptor types (cudnnBackendDescriptorType_t).
const (
	cdnPointwiseDesc   = 0
	cdnConvolutionDesc = 1
	cdnEngineDesc      = 2
	cdnEngineCfgDesc   = 3
	cdnEngineHeurDesc  = 4
	cdnPlanDesc        = 5
	cdnOpConvFwdDesc   = 10
	cdnOpPointwiseDesc = 13
	cdnOpGraphDesc     = 15
	cdnVariantPackDesc = 16
	cdnTensorDesc      = 17
	cdnMatmulDesc      = 18
	cdnOpMatmulDesc    = 19
	cdnReductionDesc   = 21
	cdnOpReductionDesc = 22
	cdnOpSDPAFwdDesc   = 41 // cuDNN 9.13 and newer
)

// Attribute value types (cudnnBackendAttributeType_t).
const (
	cdnTypeHandle     = 0
	cdnTypeDataType   = 1
	cdnTypeBoolean    = 2
	cdnTypeInt64      = 3
	cdnTypeFloat      = 4
	cdnTypeVoidPtr    = 6
	cdnTypeConvMode   = 7
	cdnTypeHeurMode   = 8
	cdnTypePointwise  = 14
	cdnTypeDescriptor = 15
	cdnTypeReduceOp   = 18
)

// Attribute names (cudnnBackendAttributeName_t).
const (
	cdnAttrPointwiseMode      = 0
	cdnAttrPointwiseMathPrec  = 1
	cdnAttrPointwiseAxis      = 9
	cdnAttrConvCompType       = 100
	cdnAttrConvMode           = 101
	cdnAttrConvDilations      = 102
	cdnAttrConvStrides        = 103
	cdnAttrConvPostPad        = 104
	cdnAttrConvPrePad         = 105
	cdnAttrConvSpatialDims    = 106
	cdnAttrHeurMode           = 200
	cdnAttrHeurGraph          = 201
	cdnAttrHeurResults        = 202
	cdnAttrCfgEngine          = 300
	cdnAttrPlanHandle         = 400
	cdnAttrPlanConfig         = 401
	cdnAttrPlanWorkspace      = 402
	cdnAttrConvFwdAlpha       = 700
	cdnAttrConvFwdBeta        = 701
	cdnAttrConvFwdDesc        = 702
	cdnAttrConvFwdW           = 703
	cdnAttrConvFwdX           = 704
	cdnAttrConvFwdY           = 705
	cdnAttrPwDesc             = 750
	cdnAttrPwX                = 751
	cdnAttrPwB                = 752
	cdnAttrPwY                = 753
	cdnAttrPwT                = 758
	cdnAttrGraphHandle        = 800
	cdnAttrGraphOps           = 801
	cdnAttrTensorAlignment    = 900
	cdnAttrTensorDataType     = 901
	cdnAttrTensorDims         = 902
	cdnAttrTensorStrides      = 903
	cdnAttrTensorUID          = 906
	cdnAttrTensorVirtual      = 907
	cdnAttrTensorByValue      = 908
	cdnAttrPackUIDs           = 1000
	cdnAttrPackPointers       = 1001
	cdnAttrPackWorkspace      = 1003
	cdnAttrEngineGlobalIndex  = 1301
	cdnAttrMatmulCompType     = 1500
	cdnAttrMatmulA            = 1520
	cdnAttrMatmulB            = 1521
	cdnAttrMatmulC            = 1522
	cdnAttrMatmulDesc         = 1523
	cdnAttrReductionOperator  = 1600
	cdnAttrReductionCompType  = 1601
	cdnAttrOpReductionX       = 1610
	cdnAttrOpReductionY       = 1611
	cdnAttrOpReductionDesc    = 1612
	cdnAttrSDPAFwdQ           = 2800
	cdnAttrSDPAFwdK           = 2801
	cdnAttrSDPAFwdV           = 2802
	cdnAttrSDPAFwdO           = 2803
	cdnAttrSDPAFwdScale       = 2805
	cdnHeurModeA              = 3
	cdnHeurModeFallback       = 2
	cdnCrossCorrelation       = 1
	cdnStatusNotSupportedBase = 3000
)

// cudnnDataType_t values of the element types cuDNN graphs take here.
var dataTypes = map[gpu.DType]int32{gpu.FP32: 0, gpu.FP64: 1, gpu.FP16: 2, gpu.BF16: 9, gpu.Bool: 11}

// desc is one backend descriptor being built; the first failing call is
// kept in err, so that a chain of sets reads as one block with one check.
type desc struct {
	a    *cudnnAPI
	d    uintptr
	what string // for messages, e.g. "tensor x"
	err  error
}

func (a *cudnnAPI) newDesc(typ int32, what string) *desc {
	ds := &desc{a: a, what: what}
	ds.err = a.check(a.cudnnBackendCreateDescriptor(typ, &ds.d), "cudnnBackendCreateDescriptor", what)
	return ds
}

func (ds *desc) set(name, typ int32, count int64, arr unsafe.Pointer) *desc {
	if ds.err == nil {
		ds.err = ds.a.check(ds.a.cudnnBackendSetAttribute(ds.d, name, typ, count, arr), "cudnnBackendSetAttribute",
			fmt.Sprintf("%s attribute %d", ds.what, name))
	}
	return ds
}

func (ds *desc) int64s(name int32, v ...int64) *desc {
	return ds.set(name, cdnTypeInt64, int64(len(v)), unsafe.Pointer(&v[0]))
}

func (ds *desc) enum(name, typ int32, v int32) *desc {
	return ds.set(name, typ, 1, unsafe.Pointer(&v))
}

func (ds *desc) descs(name int32, v ...uintptr) *desc {
	return ds.set(name, cdnTypeDescriptor, int64(len(v)), unsafe.Pointer(&v[0]))
}

func (ds *desc) boolean(name int32, v bool) *desc {
	b := byte(0)
	if v {
		b = 1
	}
	return ds.set(name, cdnTypeBoolean, 1, unsafe.Pointer(&b))
}

func (ds *desc) float(name int32, v float32) *desc {
	return ds.set(name, cdnTypeFloat, 1, unsafe.Pointer(&v))
}

func (ds *desc) handle(name int32, h uintptr) *desc {
	return ds.set(name, cdnTypeHandle, 1, unsafe.Pointer(&h))
}

// after finalizes dep, a descriptor ds refers to, before ds is built
// further: dep's failure becomes ds's.
func (ds *desc) after(dep *desc) *desc {
	if ds.err == nil {
		ds.err = dep.finalize()
	}
	return ds
}

func (ds *desc) finalize() error {
	if ds.err == nil {
		ds.err = ds.a.check(ds.a.cudnnBackendFinalize(ds.d), "cudnnBackendFinalize", ds.what)
	}
	return ds.err
}

func (ds *desc) destroy() {
	if ds != nil && ds.d != 0 {
		ds.a.cudnnBackendDestroyDescriptor(ds.d)
		ds.d = 0
	}
}
