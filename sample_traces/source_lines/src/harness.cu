// harness.cu: what main.cu (the source-lines set) and heldout_main.cu (the held-out set) share: the launch list, the
// inputs, and the two passes: `time OUT.csv` times every launch (CUDA events, median of 51 launches after 5
// warm-ups), `profile` launches each kernel once between cudaProfilerStart/Stop, for `ncu --profile-from-start off`.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <functional>
#include <string>
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

struct Launch { std::string case_name, variant, kernel; std::function<void()> run; };

static void *device_random(size_t bytes, unsigned seed)
{
  std::vector<unsigned char> host(bytes);
  unsigned x = seed;
  for (size_t i = 0; i < bytes; ++i) { x = x * 1664525u + 1013904223u; host[i] = (unsigned char)(x >> 24); }
  void *d; CHECK(cudaMalloc(&d, bytes)); CHECK(cudaMemcpy(d, host.data(), bytes, cudaMemcpyHostToDevice));
  return d;
}

// Runs the pass argv[1] names over `launches`; main's return value.
static int run_launches(std::vector<Launch> &launches, int argc, char **argv)
{
  bool profile = strcmp(argv[1], "profile") == 0;
  if (!profile && argc < 3) { fprintf(stderr, "usage: %s time OUT.csv | profile\n", argv[0]); return 2; }
  // a launch without its own run reuses the kernel of the same name listed earlier
  for (auto &l : launches)
    if (!l.run)
      for (auto &o : launches) if (o.run && o.kernel == l.kernel) { l.run = o.run; break; }
  CHECK(cudaDeviceSynchronize());

  if (profile) {
    std::vector<std::string> done;
    for (auto &l : launches) {
      if (std::find(done.begin(), done.end(), l.kernel) != done.end()) continue;
      done.push_back(l.kernel);
      l.run(); CHECK(cudaDeviceSynchronize());
      CHECK(cudaProfilerStart()); l.run(); CHECK(cudaDeviceSynchronize()); CHECK(cudaProfilerStop());
      CHECK(cudaGetLastError());
      printf("profiled %s\n", l.kernel.c_str());
    }
    return 0;
  }
  FILE *out = fopen(argv[2], "w");
  fprintf(out, "case,variant,kernel,launches,median_ns,p10_ns,p90_ns,min_ns\n");
  cudaEvent_t start, stop; CHECK(cudaEventCreate(&start)); CHECK(cudaEventCreate(&stop));
  const int warm = 5, timed = 51;
  for (auto &l : launches) {
    for (int w = 0; w < warm; ++w) l.run();
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(timed);
    for (int t = 0; t < timed; ++t) {
      CHECK(cudaEventRecord(start)); l.run(); CHECK(cudaEventRecord(stop)); CHECK(cudaEventSynchronize(stop));
      CHECK(cudaEventElapsedTime(&ms[t], start, stop));
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    auto ns = [&](int k) { return (long long)(ms[k] * 1e6 + 0.5); };
    fprintf(out, "%s,%s,%s,%d,%lld,%lld,%lld,%lld\n", l.case_name.c_str(), l.variant.c_str(), l.kernel.c_str(), timed,
            ns(timed / 2), ns(timed / 10), ns(timed - 1 - timed / 10), ns(0));
    printf("%-18s %-6s %-28s median %.1f us\n", l.case_name.c_str(), l.variant.c_str(), l.kernel.c_str(), ms[timed / 2] * 1e3);
  }
  fclose(out);
  return 0;
}
