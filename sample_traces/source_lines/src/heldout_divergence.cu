// Warp divergence with branch bodies the compiler must keep, held out (issue 45). The split is the one of John
// Cheng, Max Grossman and Ty McKercher, "Professional CUDA C Programming" (Wrox, 2014), chapter 3,
// simpleDivergence.cu (mathKernel1: even/odd threads; mathKernel2: even/odd warps), and the CUDA C++ Best Practices
// Guide (NVIDIA), "Branching and Divergence" (write the controlling condition as a function of threadIdx / warpSize
// so that whole warps take one side). The book's one-assignment bodies are here loops over the thread's input with
// a run-time trip count and different intrinsics on each side, so that neither side can be folded into a select.

__global__ void parity_lanes(const float *in, float *out, int steps)
{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[tid];
  float r = x;
  if (tid % 2 == 0) {  // [parity_branch: limiter]
    for (int k = 0; k < steps; ++k) r = __sinf(r) * 0.5f + x;
  } else {
    for (int k = 0; k < steps; ++k) r = __expf(-r * r) + x;
  }
  out[tid] = r;
}

__global__ void parity_warps(const float *in, float *out, int steps)
{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[tid];
  float r = x;
  if ((tid / warpSize) % 2 == 0) {  // [parity_branch: fixed]
    for (int k = 0; k < steps; ++k) r = __sinf(r) * 0.5f + x;
  } else {
    for (int k = 0; k < steps; ++k) r = __expf(-r * r) + x;
  }
  out[tid] = r;
}
