package cudnnx

import (
	"os"
	"testing"

	"cudarepl/gpu"
)

// TestMain lets the test binary be its own GPU worker, with cuDNN's work
// registered: package worker imports this one, so the test cannot import it.
func TestMain(m *testing.M) {
	gpu.ServeWorker()
	os.Exit(m.Run())
}
