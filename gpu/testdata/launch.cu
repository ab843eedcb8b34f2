// launch.cu measures the host wall time of a kernel launch through the CUDA
// runtime API, as the baseline for the same launches from Go. Each line on
// standard input asks for one round; for each it prints the median over
// its repetitions of (time to enqueue the launches) / launches, in µs. One
// process answers every round, so that rounds interleave with the Go
// side's without paying for a fresh context each time.
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
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
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
        fflush(stdout);
    }
    return 0;
}
