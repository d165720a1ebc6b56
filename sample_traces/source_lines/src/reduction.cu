// Parallel reduction, from Mark Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007; the CUDA samples'
// reduction_kernel.cu). reduce0..reduce2 and reduce4 as published; reduce5's last-warp unroll carries __syncwarp()
// between its steps, as the CUDA Programming Guide requires since Volta's independent thread scheduling.

// Kernel 1: interleaved addressing with divergent branching (and a modulo).
__global__ void reduce0(const int *g_idata, int *g_odata)
{
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = g_idata[i];
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) {  // [reduce_divergent: limiter]
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// Kernel 2: interleaved addressing, strided index, no divergence but shared-memory bank conflicts.
__global__ void reduce1(const int *g_idata, int *g_odata)
{
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = g_idata[i];
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    int index = 2 * s * tid;
    if (index < blockDim.x) {  // [reduce_divergent: fixed]
      sdata[index] += sdata[index + s];  // [reduce_bank: limiter]
    }
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// Kernel 3: sequential addressing, conflict free.
__global__ void reduce2(const int *g_idata, int *g_odata)
{
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = g_idata[i];
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];  // [reduce_bank: fixed]
    }
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// Kernel 4: first add during the global load; every step of the tree still ends in a block-wide barrier.
__global__ void reduce4(const int *g_idata, int *g_odata)
{
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  sdata[tid] = g_idata[i] + g_idata[i + blockDim.x];
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();  // [reduce_lastwarp: limiter]
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

__device__ void warpReduce(volatile int *sdata, unsigned int tid)
{
  sdata[tid] += sdata[tid + 32]; __syncwarp();
  sdata[tid] += sdata[tid + 16]; __syncwarp();
  sdata[tid] += sdata[tid + 8]; __syncwarp();
  sdata[tid] += sdata[tid + 4]; __syncwarp();
  sdata[tid] += sdata[tid + 2]; __syncwarp();
  sdata[tid] += sdata[tid + 1];
}

// Kernel 5: unroll the last warp, no block-wide barrier once 32 or fewer threads work.
__global__ void reduce5(const int *g_idata, int *g_odata)
{
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  sdata[tid] = g_idata[i] + g_idata[i + blockDim.x];
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();  // [reduce_lastwarp: fixed]
  }
  if (tid < 32) warpReduce(sdata, tid);
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
