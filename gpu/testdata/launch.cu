// launch.cu measures the host wall time of a kernel launch through the CUDA
// runtime API, as the baseline for the same launches from Go. It prints the
// median over reps of (time to enqueue launches kernels) / launches, in µs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void bump(int* x) {
    if (threadIdx.x == 0) *x += 1;
}

int main() {
    // 200 launches per repetition: fewer than the stream's queue holds, so
    // the host never waits for the GPU and the time is the launch's own.
    const int launches = 200, reps = 30, warmup = 3;
    int* x;
    cudaMalloc(&x, sizeof(int));
    cudaStream_t s;
    cudaStreamCreate(&s);
    std::vector<double> per;
    for (int r = 0; r < warmup + reps; r++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; i++) bump<<<1, 32, 0, s>>>(x);
        auto t1 = std::chrono::steady_clock::now();
        cudaStreamSynchronize(s);
        if (r >= warmup) per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "launch.cu: %s\n", cudaGetErrorString(err));
        return 1;
    }
    std::sort(per.begin(), per.end());
    printf("%.4f\n", per[per.size() / 2]);
    return 0;
}
