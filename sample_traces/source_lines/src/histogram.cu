// Histogram of bytes, from Jason Sanders and Edward Kandrot, "CUDA by Example" (Addison-Wesley, 2010), chapter 9,
// hist_gpu_gmem_atomics.cu and hist_gpu_shmem_atomics.cu, kernels as published.

// Global-memory atomics: every byte is one atomic on one of 256 counters in global memory.
__global__ void histo_kernel_gmem(const unsigned char *buffer, long size, unsigned int *histo)
{
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  int offset = blockDim.x * gridDim.x;
  while (i < size) {
    atomicAdd(&(histo[buffer[i]]), 1);  // [histogram_global: limiter]
    i += offset;
  }
}

// Shared-memory atomics: a private histogram per block, merged into global memory once per block.
__global__ void histo_kernel_shmem(const unsigned char *buffer, long size, unsigned int *histo)
{
  __shared__ unsigned int temp[256];
  temp[threadIdx.x] = 0;
  __syncthreads();
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  int offset = blockDim.x * gridDim.x;
  while (i < size) {
    atomicAdd(&temp[buffer[i]], 1);  // [histogram_global: fixed]
    i += offset;
  }
  __syncthreads();
  atomicAdd(&(histo[threadIdx.x]), temp[threadIdx.x]);
}
