package numeric

import (
	"runtime"
	"sync"
)

// Parallel calls f on the bands [i0, i1) of [0, n), band items each (the
// last may be shorter), on every CPU at once, and returns when all are
// done. Bands start at multiples of band whatever the number of CPUs, so
// that work seeded by i0 comes out the same on any machine.
func Parallel(n, band int, f func(i0, i1 int)) {
	band = max(band, 1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i0 := 0; i0 < n; i0 += band {
		wg.Add(1)
		sem <- struct{}{}
		go func(i0, i1 int) {
			defer func() { <-sem; wg.Done() }()
			f(i0, i1)
		}(i0, min(n, i0+band))
	}
	wg.Wait()
}
