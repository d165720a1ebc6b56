// Sum of an array with atomics, held out (issue 45), after Justin Luitjens, "Faster Parallel Reductions on Kepler"
// (NVIDIA Developer Blog, 2014; github.com/NVIDIA-developer-blog/code-samples): deviceReduceWarpAtomicKernel sums
// a grid-stride loop in a register, reduces the warp with shuffles and adds once per warp with atomicAdd. Before it,
// the same loop with the atomicAdd of every element into the one total, which the post's atomic kernels replace.
// Floats, not the post's ints: the compiler aggregates integer atomics on one address by itself (the note of the
// NVIDIA post "CUDA Pro Tip: Optimized Filtering with Warp-Aggregated Atomics", 2017), not floating-point ones.

__global__ void sum_atomic_each(const float *in, float *out, int N)
{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
    atomicAdd(out, in[i]);  // [sum_atomics: limiter]
  }
}

__inline__ __device__ float warpReduceSum(float val)
{
  for (int offset = warpSize / 2; offset > 0; offset /= 2) val += __shfl_down_sync(0xffffffff, val, offset);
  return val;
}

__global__ void sum_atomic_per_warp(const float *in, float *out, int N)
{
  float sum = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
    sum += in[i];
  }
  sum = warpReduceSum(sum);
  if ((threadIdx.x & (warpSize - 1)) == 0) atomicAdd(out, sum);  // [sum_atomics: fixed]
}
