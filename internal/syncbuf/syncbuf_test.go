package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: writes from many goroutines all land, whole.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.Write([]byte("abc\n"))
			_ = b.String()
		}()
	}
	wg.Wait()
	if got := b.String(); strings.Count(got, "abc\n") != 50 || len(got) != 200 {
		t.Errorf("after 50 writes of %q: %d bytes, %d whole writes", "abc\n", len(got), strings.Count(got, "abc\n"))
	}
}
