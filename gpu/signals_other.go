//go:build !linux

package gpu

// keepSignalHandlers does nothing outside Linux, where NVRTC is not loaded.
func keepSignalHandlers() (restore func()) { return func() {} }
