package lessons

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSizes reads sizes as the learner types them: 1048576, 2^20, 1M,
// or 1000x1003x517 (× also works) for matrix products.
func ParseSizes(args []string) ([]Size, error) {
	var out []Size
	for _, a := range args {
		var s Size
		for _, part := range strings.FieldsFunc(a, func(r rune) bool { return r == 'x' || r == '×' || r == '*' }) {
			v, err := parseCount(part)
			if err != nil {
				return nil, fmt.Errorf("size %q: %w", a, err)
			}
			s = append(s, v)
		}
		if len(s) == 0 {
			return nil, fmt.Errorf("size %q: no number", a)
		}
		out = append(out, s)
	}
	return out, nil
}

// parseCount reads 1000, 2^20, 64K or 1M as a positive count.
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
	if base, exp, ok := strings.Cut(s, "^"); ok {
		b, err1 := strconv.Atoi(base)
		e, err2 := strconv.Atoi(exp)
		if err1 != nil || err2 != nil || b < 2 || e < 0 || e > 40 {
			return 0, fmt.Errorf("%q is not a power like 2^20", s)
		}
		v := 1
		for range e {
			v *= b
		}
		return v * mult, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a positive whole number", s)
	}
	return v * mult, nil
}
