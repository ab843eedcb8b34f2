// timing_check times two of the course's kernels on their own, with the
// CUDA runtime and events and nothing of cudarepl, so that the course's
// timing can be held against it on the same GPU (docs/measurements.md).
//
//   nvcc -O3 -arch=native -o timing_check timing_check.cu && ./timing_check
//
// Each repetition is: flush L2, record an event, launch, record an event.
// Two flushes are compared: reading a buffer of twice the L2 size (L2 is
// left holding clean lines, and whatever the last repetition left dirty is
// written back while the flush runs), and writing it with cudaMemset (L2
// is left full of dirty lines, written back while the next repetition
// runs, inside the timed window). One line of JSON a case.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

// The stride-1 read of lesson 4 (read_stride with stride 1): a copy.
__global__ void read_in_order(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

// Lesson 2's first vector add.
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Reads words through L2 only; stores only if they XOR to what zeros never do.
__global__ void evict(const uint4* buf, size_t n, unsigned* sink) {
    unsigned acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcg(buf + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x2545f491u) *sink = acc;
}

int main() {
    int dev = 0, l2 = 0, sms = 0;
    CHECK(cudaSetDevice(dev));
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    size_t flushBytes = 2 * (size_t)l2;
    void* flushBuf;
    CHECK(cudaMalloc(&flushBuf, flushBytes));
    CHECK(cudaMemset(flushBuf, 0, flushBytes));

    struct Case { const char* kernel; int n; };
    const Case cases[] = {{"read_stride n=2^22", 1 << 22}, {"read_stride n=2^24", 1 << 24}, {"vadd_v1 n=2^20", 1 << 20}, {"vadd_v1 n=2^22", 1 << 22}};
    const char* flushes[] = {"read", "memset"};
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (const Case& c : cases) {
        bool isAdd = c.kernel[0] == 'v';
        float *a, *b, *out;
        CHECK(cudaMalloc(&a, 4 * (size_t)c.n));
        CHECK(cudaMalloc(&b, 4 * (size_t)c.n));
        CHECK(cudaMalloc(&out, 4 * (size_t)c.n));
        CHECK(cudaMemset(a, 0x3f, 4 * (size_t)c.n));
        CHECK(cudaMemset(b, 0x3f, 4 * (size_t)c.n));
        double bytes = (isAdd ? 12.0 : 8.0) * c.n;
        for (const char* flush : flushes) {
            std::vector<float> ms;
            for (int rep = 0; rep < 3 + 30; rep++) {
                if (flush[0] == 'r') {
                    evict<<<4 * sms, 256>>>((const uint4*)flushBuf, flushBytes / 16, (unsigned*)flushBuf);
                } else {
                    CHECK(cudaMemsetAsync(flushBuf, 0, flushBytes));
                }
                CHECK(cudaEventRecord(start));
                if (isAdd) add<<<(c.n + 255) / 256, 256>>>(a, b, out, c.n);
                else read_in_order<<<(c.n + 255) / 256, 256>>>(a, out, c.n);
                CHECK(cudaEventRecord(stop));
                CHECK(cudaEventSynchronize(stop));
                float t;
                CHECK(cudaEventElapsedTime(&t, start, stop));
                if (rep >= 3) ms.push_back(t);
            }
            std::sort(ms.begin(), ms.end());
            float med = ms[ms.size() / 2];
            printf("{\"case\": \"%s\", \"flush\": \"%s\", \"median_us\": %.2f, \"gbps\": %.1f}\n", c.kernel, flush, med * 1e3, bytes / (med * 1e-3) / 1e9);
        }
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
        CHECK(cudaFree(out));
    }
    return 0;
}
