// Package fusecmd is the REPL's and the notebooks' "fuse" command, which
// lesson 9 also runs: an elementwise expression typed by the learner
// becomes one kernel and one kernel an operation (package fuse writes
// both), compiled with NVRTC and, on a GPU, checked against float64 and
// timed beside the device-to-device copy. Its glue to the lessons' Env
// lives here so that the lessons framework does not import package fuse.
package fusecmd
