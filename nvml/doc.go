// Package nvml reads what a GPU is doing while work runs on it: its SM and
// memory clocks, power draw against its limit, temperature, and the
// reasons its clocks are held down (a power cap, heat). It binds NVML
// (libnvidia-ml.so.1, part of the NVIDIA driver) at run time, as the other
// NVIDIA libraries are bound, so nothing needs it at build time and a
// machine without it says so in one sentence.
//
// It only reads: it changes no clock or limit. Package gpu samples it
// during each Bench, so that every measurement carries the conditions it
// was taken under.
package nvml
