//go:build !linux

package dl

// KeepSignalHandlers does nothing outside Linux, where NVRTC is not loaded.
func KeepSignalHandlers() (restore func()) { return func() {} }
