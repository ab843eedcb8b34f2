package cudnnx

import (
	"math"
	"testing"
)

func TestPointwiseReference(t *testing.T) {
	for mode := range pointwiseModes {
		if mode == "gen_index" || mode == "binary_select" {
			continue // Eval works them out itself: they need the index, or a third input
		}
		if v := pointwiseValue(mode, 0.5, 2); math.IsNaN(v) {
			t.Errorf("pointwise(%s) has no reference", mode)
		}
	}
}
