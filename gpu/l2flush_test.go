package gpu

import (
	_ "embed"
	"errors"
	"strings"
	"testing"

	"cudarepl/nvrtc"
)

// l2FlushSource is the flush's CUDA source, embedded so that the test
// reads it from any working directory (make gpu-test runs the binary from
// the repository's root).
//
//go:embed l2flush.cu
var l2FlushSource string

// TestL2FlushPTX: the embedded PTX is what l2flush.cu compiles to, where
// NVRTC 11.8 is here to say so.
func TestL2FlushPTX(t *testing.T) {
	img, err := nvrtc.Compile(nvrtc.Source{Name: "l2flush.cu", Code: l2FlushSource}, nvrtc.CompileOptions{Arch: "sm_52", NoCache: true})
	if errors.Is(err, ErrNoGPU) {
		t.Skipf("needs NVRTC (Debian: libnvrtc11.2 from non-free): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if img.NVRTC != "11.8" {
		t.Skipf("l2flush.ptx is NVRTC 11.8's output; this is NVRTC %s", img.NVRTC)
	}
	body := func(ptx string) string { return ptx[strings.Index(ptx, ".version"):] }
	if body(img.PTX) != body(l2FlushPTX) {
		t.Errorf("l2flush.ptx is not what l2flush.cu compiles to; write NVRTC 11.8's PTX for sm_52 into it:\n%s", body(img.PTX))
	}
	if !strings.Contains(l2FlushPTX, "ld.global.cg.v4.u32") || strings.Count(l2FlushPTX, "st.global") != 1 {
		t.Errorf("the flush must read through L2 (ld.global.cg) and store only its sink")
	}
}
