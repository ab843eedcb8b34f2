// cudarepl_l2_flush reads n 16-byte words of buf through L2 (ld.global.cg,
// so L1 keeps none), so that afterwards L2 holds nothing but clean lines of
// buf: whatever the kernel before it left there, dirty or not, was evicted
// (and written back) while this ran. It writes to sink only if the words
// XOR to a value they never do (buf is zeros), so the reads stay.
extern "C" __global__ void cudarepl_l2_flush(const uint4* __restrict__ buf, unsigned long long n, unsigned* sink) {
    unsigned acc = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 v = __ldcg(buf + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}
