// Warp divergence, from John Cheng, Max Grossman and Ty McKercher, "Professional CUDA C Programming" (Wrox, 2014),
// chapter 3, simpleDivergence.cu: mathKernel1 branches on even/odd threads, mathKernel2 on even/odd warps.
// The book's branch bodies are one assignment each, which the compiler turns into a select; here each branch runs
// the same short recurrence loop so that the two paths are real code a divergent warp must run one after the other.
#define DIVERGENCE_STEPS 256

__global__ void mathKernel1(float *c)
{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float ia, ib;
  ia = ib = 0.0f;
  if (tid % 2 == 0) {  // [divergent_branch: limiter]
    for (int k = 0; k < DIVERGENCE_STEPS; ++k) ia = ia * 0.999f + 100.0f;
  } else {
    for (int k = 0; k < DIVERGENCE_STEPS; ++k) ib = ib * 0.998f + 200.0f;
  }
  c[tid] = ia + ib;
}

__global__ void mathKernel2(float *c)
{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float ia, ib;
  ia = ib = 0.0f;
  if ((tid / warpSize) % 2 == 0) {  // [divergent_branch: fixed]
    for (int k = 0; k < DIVERGENCE_STEPS; ++k) ia = ia * 0.999f + 100.0f;
  } else {
    for (int k = 0; k < DIVERGENCE_STEPS; ++k) ib = ib * 0.998f + 200.0f;
  }
  c[tid] = ia + ib;
}
