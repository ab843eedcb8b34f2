// A correct kernel written elsewhere: its own name, no extern "C". It is
// judged because it is the file's one kernel with vadd_v1's parameters.
__global__ void vector_add(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}
