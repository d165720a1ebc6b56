// main.cu: builds the source-lines set (issue 45) into one program. `source_lines time OUT.csv` times every kernel
// (CUDA events, median of many launches after warm-up); `source_lines profile` launches each kernel once between
// cudaProfilerStart/Stop, for `ncu --profile-from-start off`. Each case is a published kernel (before) and its
// published fix (after); cases.csv names them and the README cites their sources.
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
#include "transpose.cu"
#include "reduction.cu"
#include "histogram.cu"
#include "sgemm.cu"
#include "copy.cu"
#include "divergence.cu"
#include "ilp.cu"
#include "local_memory.cu"

int main(int argc, char **argv)
{
  if (argc < 2) { fprintf(stderr, "usage: source_lines time OUT.csv | profile\n"); return 2; }
  cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  std::vector<Launch> launches;

  // transpose: 4096 x 4096 floats
  const int TN = 4096;
  float *t_in = (float *)device_random(sizeof(float) * TN * TN, 1), *t_out;
  CHECK(cudaMalloc(&t_out, sizeof(float) * TN * TN));
  dim3 t_grid(TN / TILE_DIM, TN / TILE_DIM), t_block(TILE_DIM, BLOCK_ROWS);
  launches.push_back({"transpose_naive", "before", "transposeNaive", [=] { transposeNaive<<<t_grid, t_block>>>(t_out, t_in); }});
  launches.push_back({"transpose_naive", "after", "transposeCoalesced", [=] { transposeCoalesced<<<t_grid, t_block>>>(t_out, t_in); }});
  launches.push_back({"transpose_bank", "before", "transposeCoalesced", nullptr});
  launches.push_back({"transpose_bank", "after", "transposeNoBankConflicts", [=] { transposeNoBankConflicts<<<t_grid, t_block>>>(t_out, t_in); }});

  // reduction: 2^24 ints, 256 threads per block
  const int RN = 1 << 24, RT = 256;
  int *r_in = (int *)device_random(sizeof(int) * RN, 2), *r_out;
  CHECK(cudaMalloc(&r_out, sizeof(int) * RN));
  size_t r_smem = RT * sizeof(int);
  launches.push_back({"reduce_divergent", "before", "reduce0", [=] { reduce0<<<RN / RT, RT, r_smem>>>(r_in, r_out); }});
  launches.push_back({"reduce_divergent", "after", "reduce1", [=] { reduce1<<<RN / RT, RT, r_smem>>>(r_in, r_out); }});
  launches.push_back({"reduce_bank", "before", "reduce1", nullptr});
  launches.push_back({"reduce_bank", "after", "reduce2", [=] { reduce2<<<RN / RT, RT, r_smem>>>(r_in, r_out); }});
  launches.push_back({"reduce_lastwarp", "before", "reduce4", [=] { reduce4<<<RN / (2 * RT), RT, r_smem>>>(r_in, r_out); }});
  launches.push_back({"reduce_lastwarp", "after", "reduce5", [=] { reduce5<<<RN / (2 * RT), RT, r_smem>>>(r_in, r_out); }});

  // histogram: 64 MiB of random bytes, 2 blocks of 256 threads per SM (as the book launches it)
  const long HN = 64L << 20;
  unsigned char *h_in = (unsigned char *)device_random(HN, 3); unsigned int *h_out;
  CHECK(cudaMalloc(&h_out, 256 * sizeof(unsigned int)));
  launches.push_back({"histogram_global", "before", "histo_kernel_gmem", [=] { histo_kernel_gmem<<<sms * 2, 256>>>(h_in, HN, h_out); }});
  launches.push_back({"histogram_global", "after", "histo_kernel_shmem", [=] { histo_kernel_shmem<<<sms * 2, 256>>>(h_in, HN, h_out); }});

  // sgemm: 1024^3
  const int SN = 1024;
  float *s_a = (float *)device_random(sizeof(float) * SN * SN, 4), *s_b = (float *)device_random(sizeof(float) * SN * SN, 5), *s_c;
  CHECK(cudaMalloc(&s_c, sizeof(float) * SN * SN)); CHECK(cudaMemset(s_c, 0, sizeof(float) * SN * SN));
  CHECK(cudaMemset(s_a, 0, sizeof(float) * SN * SN)); CHECK(cudaMemset(s_b, 0, sizeof(float) * SN * SN));
  dim3 s_grid(SN / 32, SN / 32);
  launches.push_back({"sgemm_naive", "before", "sgemm_naive", [=] { sgemm_naive<<<s_grid, dim3(32, 32)>>>(SN, SN, SN, 1.0f, s_a, s_b, 0.0f, s_c); }});
  launches.push_back({"sgemm_naive", "after", "sgemm_global_mem_coalesce", [=] { sgemm_global_mem_coalesce<<<s_grid, 32 * 32>>>(SN, SN, SN, 1.0f, s_a, s_b, 0.0f, s_c); }});

  // strided copy: 2^22 threads, stride 32 against stride 1
  const int CN = 1 << 22, CS = 32;
  float *c_a; CHECK(cudaMalloc(&c_a, sizeof(float) * (size_t)CN * CS)); CHECK(cudaMemset(c_a, 0, sizeof(float) * (size_t)CN * CS));
  launches.push_back({"strided_copy", "before", "stride_float", [=] { stride_float<<<CN / 256, 256>>>(c_a, CS); }});
  launches.push_back({"strided_copy", "after", "stride_float_unit", [=] { stride_float_unit<<<CN / 256, 256>>>(c_a); }});

  // divergence: 2^22 threads
  const int DN = 1 << 22;
  float *d_c; CHECK(cudaMalloc(&d_c, sizeof(float) * DN));
  launches.push_back({"divergent_branch", "before", "mathKernel1", [=] { mathKernel1<<<DN / 256, 256>>>(d_c); }});
  launches.push_back({"divergent_branch", "after", "mathKernel2", [=] { mathKernel2<<<DN / 256, 256>>>(d_c); }});

  // dependency chain: one block of 4 warps per SM (low occupancy, as on the slides)
  float *f_out; CHECK(cudaMalloc(&f_out, sizeof(float) * sms * 128));
  launches.push_back({"fma_chain", "before", "fma_chain_ilp1", [=] { fma_chain_ilp1<<<sms, 128>>>(f_out, 0.9999f, 0.5f); }});
  launches.push_back({"fma_chain", "after", "fma_chain_ilp4", [=] { fma_chain_ilp4<<<sms, 128>>>(f_out, 0.9999f, 0.5f); }});

  // local memory: 2^22 outputs, 16 taps
  const int LN = 1 << 22;
  float coef[FIR_TAPS]; for (int k = 0; k < FIR_TAPS; ++k) coef[k] = 1.0f / (k + 1);
  CHECK(cudaMemcpyToSymbol(c_coef, coef, sizeof(coef)));
  float *l_in, *l_out; CHECK(cudaMalloc(&l_in, sizeof(float) * (LN + FIR_TAPS))); CHECK(cudaMalloc(&l_out, sizeof(float) * LN));
  CHECK(cudaMemset(l_in, 0, sizeof(float) * (LN + FIR_TAPS)));
  launches.push_back({"local_array", "before", "fir_local_window", [=] { fir_local_window<<<LN / 256, 256>>>(l_in, l_out, LN, FIR_TAPS); }});
  launches.push_back({"local_array", "after", "fir_register_window", [=] { fir_register_window<<<LN / 256, 256>>>(l_in, l_out, LN); }});

  return run_launches(launches, argc, argv);
}
