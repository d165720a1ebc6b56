// Local memory from dynamic indexing, after the CUDA C++ Best Practices Guide (NVIDIA), section "Local Memory":
// "arrays that the compiler determines may be indexed dynamically" are placed in local memory; the guide's remedy
// is indexing the compiler can resolve, here a trip count known at compile time and `#pragma unroll`, which puts the
// window in registers. The kernel is a 16-tap FIR filter (a sliding window over the input).
#define FIR_TAPS 16
__constant__ float c_coef[FIR_TAPS];

__global__ void fir_local_window(const float *in, float *out, int n, int taps)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float window[FIR_TAPS];
  for (int k = 0; k < taps; ++k) window[k] = in[i + k];
  float acc = 0.0f;
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < taps; ++k) acc += window[(k + r) % taps] * c_coef[k];  // [local_array: limiter]
  out[i] = acc;
}

__global__ void fir_register_window(const float *in, float *out, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float window[FIR_TAPS];
#pragma unroll
  for (int k = 0; k < FIR_TAPS; ++k) window[k] = in[i + k];
  float acc = 0.0f;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int k = 0; k < FIR_TAPS; ++k) acc += window[(k + r) % FIR_TAPS] * c_coef[k];  // [local_array: fixed]
  out[i] = acc;
}
