// Instruction-level parallelism, from Vasily Volkov, "Better Performance at Lower Occupancy" (GTC 2010), slides
// 10-16: one dependent chain of multiply-adds per thread against independent chains (ILP), at low occupancy.
// The slides' loop body `a = a * b + c;` with the ILP=4 version's four independent accumulators.
#define ILP_ITERATIONS 8192

__global__ void fma_chain_ilp1(float *out, float b, float c)
{
  float a = threadIdx.x;
  for (int i = 0; i < ILP_ITERATIONS; i++) {
    a = a * b + c;  // [fma_chain: limiter]
    a = a * b + c;
    a = a * b + c;
    a = a * b + c;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void fma_chain_ilp4(float *out, float b, float c)
{
  float a = threadIdx.x, d = threadIdx.x + 1, e = threadIdx.x + 2, f = threadIdx.x + 3;
  for (int i = 0; i < ILP_ITERATIONS; i++) {
    a = a * b + c;  // [fma_chain: fixed]
    d = d * b + c;
    e = e * b + c;
    f = f * b + c;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + d + e + f;
}
