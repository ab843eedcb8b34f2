package gpu

import (
	"os"
	"testing"
)

// TestMain lets the test binary be its own worker (package worker, which
// main packages import for that, imports this one).
func TestMain(m *testing.M) {
	ServeWorker()
	os.Exit(m.Run())
}
