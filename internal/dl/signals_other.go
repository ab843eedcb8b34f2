//go:build !linux

package dl

// KeepSignalHandlers does nothing outside Linux. macOS loads no NVRTC.
// Windows has no signal handlers for LLVM to replace: Go's runtime takes
// Ctrl-C through a console control handler and faults through vectored
// exception handlers; LLVM's are a console control handler, added to the
// list beside Go's, and an unhandled-exception filter, which Go does not
// use. That Ctrl-C still stops a command after NVRTC has run is yet to be
// tried on Windows.
func KeepSignalHandlers() (restore func()) { return func() {} }
