// heldout_main.cu: builds the held-out source-lines cases (issue 45, heldout_cases.csv) into one program, with the
// same passes as main.cu (harness.cu): `source_lines_heldout time OUT.csv`, `source_lines_heldout profile`. These
// cases were added after the analysis was tuned on main.cu's, to judge it on kernels it was not fitted to.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <functional>
#include <string>
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>

#include "harness.cu"
#include "heldout_divergence.cu"
#include "heldout_aat.cu"
#include "heldout_matvec.cu"
#include "heldout_horner.cu"
#include "heldout_atomics.cu"

int main(int argc, char **argv)
{
  if (argc < 2) { fprintf(stderr, "usage: source_lines_heldout time OUT.csv | profile\n"); return 2; }
  cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  std::vector<Launch> launches;

  // divergence: 2^22 threads, 64 steps of an intrinsic per thread (inputs zero: the compiler cannot know)
  const int DN = 1 << 22, DSTEPS = 64;
  float *d_in, *d_out; CHECK(cudaMalloc(&d_in, sizeof(float) * DN)); CHECK(cudaMalloc(&d_out, sizeof(float) * DN));
  CHECK(cudaMemset(d_in, 0, sizeof(float) * DN));
  launches.push_back({"parity_branch", "before", "parity_lanes", [=] { parity_lanes<<<DN / 256, 256>>>(d_in, d_out, DSTEPS); }});
  launches.push_back({"parity_branch", "after", "parity_warps", [=] { parity_warps<<<DN / 256, 256>>>(d_in, d_out, DSTEPS); }});

  // C = A A^T: A is 4096 x 32 floats, C 4096 x 4096, blocks of 32 x 32 (as the guide launches them)
  const int AM = 4096;
  float *aat_a, *aat_c; CHECK(cudaMalloc(&aat_a, sizeof(float) * AM * AAT_TILE_DIM)); CHECK(cudaMalloc(&aat_c, sizeof(float) * AM * AM));
  CHECK(cudaMemset(aat_a, 0, sizeof(float) * AM * AAT_TILE_DIM));
  dim3 aat_grid(AM / AAT_TILE_DIM, AM / AAT_TILE_DIM), aat_block(AAT_TILE_DIM, AAT_TILE_DIM);
  launches.push_back({"aat_tile_bank", "before", "coalescedMultiply", [=] { coalescedMultiply<<<aat_grid, aat_block>>>(aat_a, aat_c, AM); }});
  launches.push_back({"aat_tile_bank", "after", "coalescedMultiplyNoBankConflicts", [=] { coalescedMultiplyNoBankConflicts<<<aat_grid, aat_block>>>(aat_a, aat_c, AM); }});

  // matrix-vector: B is 131072 x 1024 floats (512 MiB), one thread per row, 128 threads per block
  const int MR = 1 << 17, MC = 1024;
  float *m_b, *m_c, *m_a; CHECK(cudaMalloc(&m_b, sizeof(float) * (size_t)MR * MC));
  CHECK(cudaMalloc(&m_c, sizeof(float) * MC)); CHECK(cudaMalloc(&m_a, sizeof(float) * MR));
  CHECK(cudaMemset(m_b, 0, sizeof(float) * (size_t)MR * MC)); CHECK(cudaMemset(m_c, 0, sizeof(float) * MC));
  launches.push_back({"matvec_rows", "before", "matvec_row_major", [=] { matvec_row_major<<<MR / 128, 128>>>(m_b, m_c, m_a, MR, MC); }});
  launches.push_back({"matvec_rows", "after", "matvec_col_major", [=] { matvec_col_major<<<MR / 128, 128>>>(m_b, m_c, m_a, MR, MC); }});

  // polynomial: one block of 4 warps per SM, 2048 points per thread
  const int PPOINTS = 2048;
  float poly[POLY_TERMS]; for (int k = 0; k < POLY_TERMS; ++k) poly[k] = 1.0f / (k + 1);
  CHECK(cudaMemcpyToSymbol(c_poly, poly, sizeof(poly)));
  float *p_in, *p_out; CHECK(cudaMalloc(&p_in, sizeof(float) * sms * 128)); CHECK(cudaMalloc(&p_out, sizeof(float) * sms * 128));
  CHECK(cudaMemset(p_in, 0, sizeof(float) * sms * 128));
  launches.push_back({"horner_chain", "before", "poly_horner", [=] { poly_horner<<<sms, 128>>>(p_in, p_out, PPOINTS, 0.25f); }});
  launches.push_back({"horner_chain", "after", "poly_split4", [=] { poly_split4<<<sms, 128>>>(p_in, p_out, PPOINTS, 0.25f); }});

  // sum: 2^21 floats, 8 blocks of 256 threads per SM, grid-stride
  const int AN = 1 << 21;
  float *s_in = (float *)device_random(sizeof(float) * AN, 6), *s_out;
  CHECK(cudaMalloc(&s_out, sizeof(float))); CHECK(cudaMemset(s_out, 0, sizeof(float)));
  launches.push_back({"sum_atomics", "before", "sum_atomic_each", [=] { sum_atomic_each<<<sms * 8, 256>>>(s_in, s_out, AN); }});
  launches.push_back({"sum_atomics", "after", "sum_atomic_per_warp", [=] { sum_atomic_per_warp<<<sms * 8, 256>>>(s_in, s_out, AN); }});

  return run_launches(launches, argc, argv);
}
