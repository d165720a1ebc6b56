// SGEMM, from Simon Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance" (2022),
// code: github.com/siboehm/SGEMM_CUDA, src/kernels/1_naive.cuh and 2_kernel_global_mem_coalesce.cuh.
// The second kernel's template parameter BLOCKSIZE is a constant here (32, as the repository launches it).

// Kernel 1: naive. Consecutive threads of a warp take consecutive rows of A: the loads of A stride by K floats.
__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
  const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < M && y < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[x * K + i] * B[i * N + y];  // [sgemm_naive: limiter]
    }
    C[x * N + y] = alpha * tmp + beta * C[x * N + y];
  }
}

#define BLOCKSIZE 32

// Kernel 2: global memory coalescing. Consecutive threads take consecutive columns of B and C.
__global__ void sgemm_global_mem_coalesce(int M, int N, int K, float alpha, const float *A, const float *B,
                                          float beta, float *C)
{
  const int cRow = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
  const int cCol = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);
  if (cRow < M && cCol < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[cRow * K + i] * B[i * N + cCol];  // [sgemm_naive: fixed]
    }
    C[cRow * N + cCol] = alpha * tmp + beta * C[cRow * N + cCol];
  }
}
