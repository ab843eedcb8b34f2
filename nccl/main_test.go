package nccl

import (
	"testing"

	"cudarepl/internal/gputest"
)

// TestMain lets the test binary be its own GPU worker, with NCCL's work
// registered: package worker imports this one, so the test cannot import it.
func TestMain(m *testing.M) { gputest.Main(m) }
