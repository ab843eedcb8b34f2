package gpu

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"unsafe"
)

func TestPackArgs(t *testing.T) {
	args := []Arg{Int32(-3), Uint32(7), Int64(-1 << 40), Float32(1.5), Float64(-2.25), Ptr(0x7f0012345678)}
	p, err := packArgs(nil, args)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	tests := []struct {
		want []byte // the bytes the kernel reads at the slot
	}{
		{le32(uint32(0xfffffffd))},
		{le32(7)},
		{le64(uint64(0xffffff0000000000))},
		{le32(math.Float32bits(1.5))},
		{le64(math.Float64bits(-2.25))},
		{le64(0x7f0012345678)},
	}
	for i, tt := range tests {
		if p.ptrs[i] != uintptr(unsafe.Pointer(&p.vals[i])) {
			t.Errorf("arg %d: pointer %#x is not its slot %p", i, p.ptrs[i], &p.vals[i])
		}
		slot := le64(p.vals[i])[:len(tt.want)]
		if string(slot) != string(tt.want) {
			t.Errorf("arg %d (%s %v): slot = % x, want % x", i, args[i].Kind, args[i], slot, tt.want)
		}
		if args[i].Kind.Size() != len(tt.want) {
			t.Errorf("arg %d: Size() = %d, want %d", i, args[i].Kind.Size(), len(tt.want))
		}
	}
	if _, err := packArgs(nil, []Arg{{}}); err == nil || !strings.Contains(err.Error(), "argument 0 has no type") {
		t.Errorf("packArgs(zero Arg) = %v, want a no-type error", err)
	}
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestArgString(t *testing.T) {
	tests := []struct {
		a    Arg
		want string
	}{
		{Int32(-5), "-5"}, {Uint32(5), "5"}, {Int64(1 << 40), "1099511627776"},
		{Float32(0.5), "0.5"}, {Float64(1e-3), "0.001"}, {Ptr(0x1000), "0x1000"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%v.String() = %q, want %q", tt.a.Kind, got, tt.want)
		}
	}
}

func TestDimAndBlocks(t *testing.T) {
	if got := Dim(4); got != (Dim3{4, 1, 1}) {
		t.Errorf("Dim(4) = %v", got)
	}
	if got := Dim(4, 5, 6).Count(); got != 120 {
		t.Errorf("Dim(4,5,6).Count() = %d, want 120", got)
	}
	for _, tt := range []struct{ n, b, want int }{{1, 256, 1}, {256, 256, 1}, {257, 256, 2}, {1023, 256, 4}, {0, 256, 0}} {
		if got := Blocks(tt.n, tt.b); got != tt.want {
			t.Errorf("Blocks(%d, %d) = %d, want %d", tt.n, tt.b, got, tt.want)
		}
	}
}

func TestFloat16RoundTrip(t *testing.T) {
	tests := []struct {
		in   float32
		bits uint16
		back float32
	}{
		{0, 0x0000, 0},
		{1, 0x3c00, 1},
		{-2, 0xc000, -2},
		{65504, 0x7bff, 65504},
		{65520, 0x7c00, float32(math.Inf(1))}, // rounds past the largest half
		{1.0 / 3, 0x3555, 0.33325195},
		{5.9604645e-08, 0x0001, 5.9604645e-08}, // smallest subnormal
		{1 + 1.0/2048, 0x3c00, 1},              // tie rounds to even
		{1 + 3.0/2048, 0x3c02, 1.001953125},    // tie rounds to even (up)
	}
	for _, tt := range tests {
		if got := Float16Bits(tt.in); got != tt.bits {
			t.Errorf("Float16Bits(%v) = %#04x, want %#04x", tt.in, got, tt.bits)
		}
		if got := Float16From(tt.bits); got != tt.back {
			t.Errorf("Float16From(%#04x) = %v, want %v", tt.bits, got, tt.back)
		}
	}
	for _, tt := range []struct {
		in   float32
		bits uint16
	}{{1, 0x3f80}, {-1.5, 0xbfc0}, {1.0 / 3, 0x3eab}} {
		if got := BFloat16Bits(tt.in); got != tt.bits {
			t.Errorf("BFloat16Bits(%v) = %#04x, want %#04x", tt.in, got, tt.bits)
		}
	}
	if got := BFloat16From(0x3eab); math.Abs(float64(got)-1.0/3) > 2e-3 {
		t.Errorf("BFloat16From(0x3eab) = %v, want about 1/3", got)
	}
}

func TestFloat8E4M3(t *testing.T) {
	tests := []struct {
		in   float32
		bits uint8
		back float32
	}{
		{0, 0x00, 0}, {1, 0x38, 1}, {-2, 0xc0, -2}, {0.5, 0x30, 0.5},
		{448, 0x7e, 448}, {1000, 0x7e, 448}, {-1e6, 0xfe, -448},
		{1.0 / 512, 0x01, 1.0 / 512}, // smallest subnormal
		{1.0 / 64, 0x08, 1.0 / 64},   // smallest normal
		{1.0625, 0x38, 1},            // tie between 1 and 1.125 rounds to even
		{1.1875, 0x3a, 1.25},         // tie between 1.125 and 1.25 rounds to even
		{15.5, 0x58, 16},             // rounds up into the next binade
		{3.3, 0x45, 3.25},
	}
	for _, tt := range tests {
		if got := Float8E4M3Bits(tt.in); got != tt.bits {
			t.Errorf("Float8E4M3Bits(%v) = %#02x, want %#02x", tt.in, got, tt.bits)
		}
		if got := Float8E4M3From(tt.bits); got != tt.back {
			t.Errorf("Float8E4M3From(%#02x) = %v, want %v", tt.bits, got, tt.back)
		}
	}
	for b := 0; b < 256; b++ { // every finite value encodes to itself
		v := Float8E4M3From(uint8(b))
		if v != v {
			continue
		}
		if got := Float8E4M3Bits(v); Float8E4M3From(got) != v {
			t.Errorf("round trip of %#02x (%v) gave %#02x", b, v, got)
		}
	}
}

func TestTensorMapCheck(t *testing.T) {
	ok := TensorMap{Base: 0x1000, Type: FP16, Rows: 1000, Cols: 520, BoxRows: 128, BoxCols: 64, Swizzle128: true}
	if err := ok.check(); err != nil {
		t.Fatalf("check(%v) = %v, want nil", ok, err)
	}
	for _, tc := range []struct {
		edit func(*TensorMap)
		want string
	}{
		{func(m *TensorMap) { m.Type = FP64 }, "element type"},
		{func(m *TensorMap) { m.Base = 0x1008 }, "not 16-byte aligned"},
		{func(m *TensorMap) { m.Rows = 0 }, "empty matrix"},
		{func(m *TensorMap) { m.Count = -2 }, "empty matrix"},
		{func(m *TensorMap) { m.Cols = 517 }, "row of 1034 bytes"},
		{func(m *TensorMap) { m.BoxRows = 257 }, "box sides"},
		{func(m *TensorMap) { m.BoxCols = 4 }, "box row of 8 bytes"},
		{func(m *TensorMap) { m.BoxCols = 128 }, "at most 128 bytes, not 256"},
	} {
		m := ok
		tc.edit(&m)
		if err := m.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("check(%v) = %v, want an error with %q", m, err, tc.want)
		}
	}
	batch := ok
	batch.Count = 40
	if err := batch.check(); err != nil || !strings.Contains(batch.String(), "40 × 1000x520") {
		t.Errorf("check(%v) = %v, want nil and the count in its name", batch, err)
	}
	if _, err := packArgs(nil, []Arg{TMap(ok)}); err == nil || !strings.Contains(err.Error(), "cuTensorMapEncodeTiled") {
		t.Errorf("packArgs(tensor map, no driver) = %v, want a no-TMA error", err)
	}
	if _, err := packArgs(nil, []Arg{{Kind: ArgTensorMap}}); err == nil || !strings.Contains(err.Error(), "no TensorMap") {
		t.Errorf("packArgs(tensor map without map) = %v, want an error", err)
	}
}
