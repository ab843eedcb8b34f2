// Transfers: moving data between host memory and the GPU over the PCIe
// link, far slower than the GPU's own memory (53× on the H100 lesson 3
// was recorded on: 63.0 GB/s each way against 3352).

// read_mapped copies pinned host memory into device memory from a kernel:
// zero-copy. Pinned host memory is mapped into the GPU's address space, so
// a kernel can load from it directly; every load then crosses the link.
// n4 counts float4s.
extern "C" __global__ void read_mapped(const float4* __restrict__ host, float4* __restrict__ dev, int n4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) dev[i] = host[i];
}

// work is the pipeline's compute: iters rounds of v = a·v + (1 − a) on
// each element, with a = 1 − 2⁻¹⁰, which pulls v towards 1. It reads and
// writes each element once and does as much arithmetic as iters asks, so
// computing a chunk can take as long as copying it.
extern "C" __global__ void work(const float* x, float* y, int n, int iters) {
    const float a = 1.0f - 1.0f / 1024, b = 1.0f / 1024;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        for (int k = 0; k < iters; k++) v = fmaf(a, v, b);
        y[i] = v;
    }
}
