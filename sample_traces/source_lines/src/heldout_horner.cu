// Polynomial evaluation, held out (issue 45): Horner's rule is one chain of dependent multiply-adds, each waiting
// for the previous one; the published remedy is to split the polynomial into parts evaluated independently in
// powers of x^k and combined at the end (Donald Knuth, "The Art of Computer Programming", vol. 2, 3rd ed., 1997,
// section 4.6.4: the second-order Horner rule and Estrin's scheme, G. Estrin 1960), here with k = 4: four
// independent chains of a quarter the length. Each thread evaluates the degree-63 polynomial at POLY_POINTS points
// one after the other (x <- p(x) * h + x0), with one block of 4 warps per SM, the low-occupancy setting of
// Vasily Volkov's "Better Performance at Lower Occupancy" (GTC 2010) in which a chain's latency shows.
#define POLY_TERMS 64
__constant__ float c_poly[POLY_TERMS];

__global__ void poly_horner(const float *in, float *out, int points, float h)
{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float x0 = in[tid], x = x0;
#pragma unroll 1
  for (int s = 0; s < points; ++s) {
    float p = c_poly[POLY_TERMS - 1];
#pragma unroll
    for (int k = POLY_TERMS - 2; k >= 0; --k) {
      p = p * x + c_poly[k];  // [horner_chain: limiter]
    }
    x = p * h + x0;
  }
  out[tid] = x;
}

__global__ void poly_split4(const float *in, float *out, int points, float h)
{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float x0 = in[tid], x = x0;
#pragma unroll 1
  for (int s = 0; s < points; ++s) {
    float x2 = x * x, x4 = x2 * x2;
    float p0 = c_poly[POLY_TERMS - 4], p1 = c_poly[POLY_TERMS - 3], p2 = c_poly[POLY_TERMS - 2],
          p3 = c_poly[POLY_TERMS - 1];
#pragma unroll
    for (int k = POLY_TERMS - 8; k >= 0; k -= 4) {
      p0 = p0 * x4 + c_poly[k];  // [horner_chain: fixed]
      p1 = p1 * x4 + c_poly[k + 1];
      p2 = p2 * x4 + c_poly[k + 2];
      p3 = p3 * x4 + c_poly[k + 3];
    }
    float p = (p3 * x + p2) * x2 + (p1 * x + p0);
    x = p * h + x0;
  }
  out[tid] = x;
}
