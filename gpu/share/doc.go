// Package share lets learners share one GPU: their timed regions take
// turns through a host-wide lock per GPU ([Lock], where $CUDAREPL_GPU_LOCK
// says), and each worker keeps a device-memory budget ([Budget], from
// $CUDAREPL_MEM_LIMIT).
//
// It allocates and times nothing itself: package gpu takes the lock around
// a measurement's timed repetitions and holds each allocation to the
// budget, which this package reads and whose arithmetic it does.
package share
