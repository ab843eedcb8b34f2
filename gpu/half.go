package gpu

import "math"

// Float16Bits rounds f to the nearest IEEE 754 half-precision value (ties to
// even) and returns its bits. Values beyond the fp16 range become ±Inf.
func Float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 0x1f: // overflow or Inf
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero in fp16
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is still right
	}
	return sign | uint16(half)
}

// Float16From returns the float32 value of fp16 bits h.
func Float16From(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(mant) / 1024 / (1 << 14) // subnormal: mant · 2^-24
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// BFloat16Bits rounds f to the nearest bfloat16 (ties to even) and returns
// its bits: the top half of the float32, rounded.
func BFloat16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BFloat16From returns the float32 value of bfloat16 bits h.
func BFloat16From(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float8E4M3Bits rounds f to the nearest FP8 E4M3 value (ties to even) and
// returns its bits. E4M3 has no infinity: values beyond ±448 saturate to
// ±448, and NaN becomes 0x7f.
func Float8E4M3Bits(f float32) uint8 {
	if f != f {
		return 0x7f
	}
	sign := uint8(0)
	if math.Signbit(float64(f)) {
		sign, f = 0x80, -f
	}
	if f >= 448 {
		return sign | 0x7e
	}
	// Round to the nearest multiple of the spacing at f's binade: 2^(e-3)
	// for normals (e ≥ -6), 2^-9 for subnormals.
	e := math.Floor(math.Log2(float64(f)))
	if f == 0 || e < -6 {
		e = -6
	}
	q := math.RoundToEven(float64(f) / math.Exp2(e-3)) // in [8, 16] for normals, [0, 8) below
	if q == 16 {
		q, e = 8, e+1
	}
	if e > 8 || (e == 8 && q > 14) {
		return sign | 0x7e
	}
	if q < 8 { // subnormal
		return sign | uint8(q)
	}
	return sign | uint8(e+7)<<3 | uint8(q-8)
}

// Float8E4M3From returns the float32 value of E4M3 bits b.
func Float8E4M3From(b uint8) float32 {
	sign := float32(1)
	if b&0x80 != 0 {
		sign = -1
	}
	exp, mant := int(b>>3&0xf), float64(b&7)
	switch {
	case exp == 0xf && mant == 7:
		return float32(math.NaN())
	case exp == 0:
		return sign * float32(mant*math.Exp2(-9))
	}
	return sign * float32((1+mant/8)*math.Exp2(float64(exp-7)))
}
