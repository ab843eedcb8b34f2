// Package remote runs cudarepl's GPU worker on another machine, the one
// with the GPU: a Transport (for gpu.Options.Remote) starts each worker
// through a command whose standard input and output carry its pipe, the
// system's ssh (SSH, $CUDAREPL_REMOTE) or any other (Command,
// $CUDAREPL_WORKER_CMD), and Serve is that command's far end, "cudarepl
// worker", which runs the worker there as its own child.
//
//	t, _ := remote.SSH("me@gpu1")
//	w, _ := gpu.Open(gpu.Options{Remote: t})
//
// Between the two ends the worker protocol's streams travel in frames,
// with a heartbeat each way, a wrapper's logs and how the worker ended: a
// fault costs the host's child, not the connection, and a lost connection
// is one gpu.ConnectionError. A host without a cudarepl that speaks
// gpu.WorkerProtocol is a *BinaryError, which Install can often mend.
//
// Importing the package registers FromEnv with gpu.RegisterRemote, so
// that gpu.Open sends workers where the environment says; package worker
// imports it. What it does not do: it calls no CUDA, and it knows no call
// of the worker protocol, whose bytes it only carries.
package remote
