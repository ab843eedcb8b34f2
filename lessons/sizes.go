package lessons

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxCount is the largest number a size may hold, 2^40: a trillion
// elements, far beyond any GPU's memory, and small enough that the bytes
// of a size still fit in an int64.
const MaxCount = 1 << 40

// ParseSizes reads sizes as the learner types them: 1048576, 2^20, 1M,
// or 1000x1003x517 (× also works) for matrix products.
func ParseSizes(args []string) ([]Size, error) {
	var out []Size
	for _, a := range args {
		parts := strings.FieldsFunc(a, func(r rune) bool { return r == 'x' || r == '×' || r == '*' })
		var s Size
		for _, part := range parts {
			v, err := parseCount(part)
			switch {
			case err != nil && len(parts) == 1:
				return nil, fmt.Errorf("size %q: %w", a, err)
			case err != nil:
				return nil, fmt.Errorf("size %q: %s: %w", a, part, err)
			}
			s = append(s, v)
		}
		if len(s) == 0 {
			return nil, fmt.Errorf("size %q: no number (sizes read like 1048576, 2^20, 1M or 1000x1003x517)", a)
		}
		out = append(out, s)
	}
	return out, nil
}

// errTooLarge is a number past MaxCount.
var errTooLarge = errors.New("too large: a size's numbers go up to 2^40")

// parseCount reads 1000, 2^20, 64K or 1M as a positive count of at most
// MaxCount.
func parseCount(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	var v int
	if base, exp, ok := strings.Cut(s, "^"); ok {
		b, err1 := strconv.Atoi(base)
		e, err2 := strconv.Atoi(exp)
		if err1 != nil || err2 != nil || b < 2 || e < 0 {
			return 0, errors.New("not a power like 2^20")
		}
		v = 1
		for range e {
			if v > MaxCount/b {
				return 0, errTooLarge
			}
			v *= b
		}
	} else {
		n, err := strconv.Atoi(s)
		switch {
		case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(s, "-"):
			return 0, errTooLarge
		case err != nil || n <= 0:
			return 0, errors.New("not a positive whole number (sizes read like 1048576, 2^20, 1M or 1000x1003x517)")
		}
		v = n
	}
	if hi, lo := bits.Mul64(uint64(v), uint64(mult)); hi != 0 || lo > MaxCount {
		return 0, errTooLarge
	}
	return v * mult, nil
}
