// Kernels of the latency-hiding literature (Volkov, "Understanding Latency Hiding on GPUs", 2016; Cheng et al.,
// "Professional CUDA C Programming", 2014), each instrumented with tracekit's warp_trace.cuh.
//
//   samples OUT_DIR [--launches K] [--no-trace] [--skip NAME,NAME...]
//
// Runs every sample configuration K times (default 3): the first K-1 launches untraced (a null record pointer),
// the last one traced, and writes OUT_DIR/<sample>.csv (tracekit warp-trace v1) with that launch's cudaEvent time.
// --no-trace runs all K untraced and writes nothing; --skip leaves out the named configurations. Each sample group sits in an NVTX range, each configuration in
// a nested one. Results are checked on the host; the program exits non-zero on a wrong result.
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "samples.cuh"

// ---------------------------------------------------------------------------------------------------------------
// Kernels. Streaming kernels give each block a contiguous chunk of blockDim * per_thread elements; in each
// iteration of a loop that is kept rolled (#pragma unroll 1) a warp touches 32 consecutive elements.

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        c[i] = a[i] + b[i];
    }
    WARP_TRACE_END(rec);
}

// a[i] = b[c[i]]: coalesced with the identity permutation, one 32-byte sector per element with a random one.
__global__ void permute(float* __restrict__ a, const float* __restrict__ b, const int* __restrict__ c, int per_thread,
                        WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        a[i] = b[c[i]];
    }
    WARP_TRACE_END(rec);
}

// Absolute value with a data-dependent branch, run over all-positive and all-negative inputs.
__global__ void abs_values(const float* __restrict__ in, float* __restrict__ out, int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        float x = in[i];
        if (x < 0.0f) x = -x;
        out[i] = x;
    }
    WARP_TRACE_END(rec);
}

// Copy with LOADS independent loads per thread per iteration, all issued before any store (ILP = LOADS).
template <int LOADS>
__device__ void memcpy_body(const float* __restrict__ in, float* __restrict__ out, int per_thread) {
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; k += LOADS) {
        float v[LOADS];
#pragma unroll
        for (int j = 0; j < LOADS; ++j) v[j] = in[base + (size_t)(k + j) * blockDim.x];
#pragma unroll
        for (int j = 0; j < LOADS; ++j) out[base + (size_t)(k + j) * blockDim.x] = v[j];
    }
}

__global__ void memcpy_1load(const float* __restrict__ in, float* __restrict__ out, int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    memcpy_body<1>(in, out, per_thread);
    WARP_TRACE_END(rec);
}

__global__ void memcpy_2loads(const float* __restrict__ in, float* __restrict__ out, int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    memcpy_body<2>(in, out, per_thread);
    WARP_TRACE_END(rec);
}

__global__ void memcpy_4loads(const float* __restrict__ in, float* __restrict__ out, int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    memcpy_body<4>(in, out, per_thread);
    WARP_TRACE_END(rec);
}

// In-place block sums (Cheng et al., ch. 3): neighbored pairs, active threads tid % (2*stride) == 0 (divergent).
__global__ void reduceNeighbored(int* g_idata, int* g_odata, unsigned int n, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const unsigned int tid = threadIdx.x;
    int* idata = g_idata + (size_t)blockIdx.x * blockDim.x;
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        if ((tid % (2 * stride)) == 0) idata[tid] += idata[tid + stride];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = idata[0];
    WARP_TRACE_END(rec);
}

// Interleaved pairs: active threads tid < stride (contiguous, whole warps idle instead of diverging).
__global__ void reduceInterleaved(int* g_idata, int* g_odata, unsigned int n, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const unsigned int tid = threadIdx.x;
    int* idata = g_idata + (size_t)blockIdx.x * blockDim.x;
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) idata[tid] += idata[tid + stride];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = idata[0];
    WARP_TRACE_END(rec);
}

// A dependent FMA chain; every heavy_every-th block (the last of each group) runs heavy_factor times longer.
__global__ void imbalanced_blocks(float* __restrict__ out, int iterations, int heavy_every, int heavy_factor,
                                  WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    int n = iterations;
    if (blockIdx.x % heavy_every == (unsigned int)(heavy_every - 1)) n *= heavy_factor;
    float x = threadIdx.x * 1e-3f, y = 1.0f;
#pragma unroll 1
    for (int k = 0; k < n; ++k) {
        x = fmaf(x, 0.999f, y);
        y = fmaf(y, 0.5f, 0.25f);
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = x + y;
    WARP_TRACE_END(rec);
}

// ---------------------------------------------------------------------------------------------------------------
// Driver.

struct Sample {
    std::string name;          // output file stem
    std::string group;         // NVTX range around the group
    const char* kernel;        // kernel name written into the trace
    const void* function;      // for attributes and occupancy
    dim3 grid, block;
    size_t smem_bytes;         // dynamic shared memory per block (sets the occupancy of the streaming kernels)
    double dram_bytes;         // bytes the kernel must move at least (0: not a streaming kernel)
    std::function<void(WarpRecord*)> launch;
    std::function<void()> before_launch;  // e.g. restore the in-place reduction's input
    std::function<bool()> check;          // host check of the result after the last launch
};

struct Options {
    std::string out_dir;
    int launches = 3;
    bool trace = true;
    std::string skip;  // comma-separated sample names
};

static bool skipped(const Options& o, const std::string& name) {
    return ("," + o.skip + ",").find("," + name + ",") != std::string::npos;
}

static int g_sm_count = 0;

// Dynamic shared memory per block that leaves room for exactly `blocks_per_sm` blocks of `threads` per SM (0 when
// the SM holds that many blocks with no padding).
static size_t smem_for_blocks_per_sm(const void* function, int threads, int blocks_per_sm) {
    int device = 0, optin = 0, resident = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, function, threads, 0));
    if (resident <= blocks_per_sm) return 0;
    for (int smem = optin / 1024 * 1024; smem >= 0; smem -= 1024) {
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, function, threads, smem));
        if (resident >= blocks_per_sm) return (size_t)smem;
    }
    return 0;
}

static void prepare_function(const void* function) {
    int device = 0, optin = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CHECK(cudaFuncSetAttribute(function, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    CHECK(cudaFuncSetAttribute(function, cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared));
}

static bool run_sample(const Sample& s, const Options& o) {
    nvtxRangePushA(s.name.c_str());
    const int threads = s.block.x * s.block.y * s.block.z;
    const size_t records = warp_trace::record_count(s.grid, s.block);
    WarpRecord* rec = nullptr;
    if (o.trace) {
        CHECK(cudaMalloc(&rec, records * sizeof(WarpRecord)));
        CHECK(cudaMemset(rec, 0, records * sizeof(WarpRecord)));
    }
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, s.function));
    int blocks_per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, s.function, threads, s.smem_bytes));

    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    float untraced_ms = -1.0f, traced_ms = -1.0f;
    for (int k = 0; k < o.launches; ++k) {
        const bool traced = o.trace && k == o.launches - 1;
        if (s.before_launch) s.before_launch();
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaEventRecord(start));
        s.launch(traced ? rec : nullptr);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        (traced ? traced_ms : untraced_ms) = ms;
    }
    const bool ok = !s.check || s.check();
    if (o.trace) {
        const std::string path = o.out_dir + "/" + s.name + ".csv";
        CHECK(warp_trace::write_csv(path.c_str(), s.kernel, s.function, s.grid, s.block, s.smem_bytes, rec, 1,
                                    traced_ms * 1e6));
        CHECK(cudaFree(rec));
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));

    const int warps_per_block = (threads + 31) / 32;
    const double best_ms = untraced_ms > 0 ? untraced_ms : traced_ms;
    std::printf("%-26s %-26s grid %6u block %4d smem %6zu regs %3d  blocks/SM %2d warps/SM %2d  waves %6.2f  "
                "untraced %9.1f us  traced %9.1f us  %s",
                s.name.c_str(), s.kernel, s.grid.x * s.grid.y * s.grid.z, threads, s.smem_bytes, attr.numRegs,
                blocks_per_sm, blocks_per_sm * warps_per_block,
                (double)s.grid.x * s.grid.y * s.grid.z / ((double)blocks_per_sm * g_sm_count), untraced_ms * 1e3,
                traced_ms * 1e3, ok ? "ok" : "WRONG RESULT");
    if (s.dram_bytes > 0) std::printf("  %7.1f GB/s", s.dram_bytes / (best_ms * 1e-3) / 1e9);
    std::printf("\n");
    std::fflush(stdout);
    nvtxRangePop();
    return ok;
}

template <typename T>
static T* device_copy(const std::vector<T>& host) {
    T* d = nullptr;
    CHECK(cudaMalloc(&d, host.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T>
static std::vector<T> host_copy(const T* device, size_t n) {
    std::vector<T> h(n);
    CHECK(cudaMemcpy(h.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

static double black_scholes_call_reference(double s, double x, double t, double r, double v) {
    const double d1 = (std::log(s / x) + (r + 0.5 * v * v) * t) / (v * std::sqrt(t));
    const double d2 = d1 - v * std::sqrt(t);
    auto cnd = [](double d) { return 0.5 * std::erfc(-d / std::sqrt(2.0)); };
    return s * cnd(d1) - x * std::exp(-r * t) * cnd(d2);
}

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--launches") && i + 1 < argc) {
            o.launches = std::max(1, std::atoi(argv[++i]));
        } else if (!std::strcmp(argv[i], "--no-trace")) {
            o.trace = false;
        } else if (!std::strcmp(argv[i], "--skip") && i + 1 < argc) {
            o.skip = argv[++i];
        } else if (argv[i][0] != '-' && o.out_dir.empty()) {
            o.out_dir = argv[i];
        } else {
            std::fprintf(stderr, "usage: %s OUT_DIR [--launches K] [--no-trace] [--skip NAME,NAME...]\n", argv[0]);
            return 2;
        }
    }
    if (o.out_dir.empty()) o.out_dir = ".";

    int device = 0, driver = 0, runtime = 0;
    CHECK(cudaSetDevice(device));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, device));
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));
    g_sm_count = prop.multiProcessorCount;
    std::printf("device %s, CC %d.%d, %d SMs, L2 %d bytes, driver API %d, runtime %d, launches per sample %d%s\n",
                prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize, driver, runtime,
                o.launches, o.trace ? ", last one traced" : ", none traced");

    // Streaming problems: 2^24 floats (64 MiB) per array, larger than the 50 MB L2; 32 elements per thread
    // (2048 blocks of 256 threads, 16384 warps), to keep the traces small.
    const int n = 1 << 24, per_thread = 32, threads = 256;
    const dim3 block(threads), grid(n / (threads * per_thread));
    std::vector<float> h_a(n), h_b(n);
    for (int i = 0; i < n; ++i) {
        h_a[i] = (float)(i % 1000);
        h_b[i] = (float)(2 * (i % 777));
    }
    const float* ha = h_a.data();  // the checks capture pointers, not copies of the vectors
    const float* hb = h_b.data();
    float* d_a = device_copy(h_a);
    float* d_b = device_copy(h_b);
    float* d_c = nullptr;
    CHECK(cudaMalloc(&d_c, n * sizeof(float)));

    std::vector<Sample> samples;
    const double streaming_bytes = 3.0 * n * sizeof(float);

    // Vector add at 8, 16, 32 and 64 warps per SM (1, 2, 4, 8 blocks of 8 warps), set with dynamic shared memory.
    prepare_function((const void*)vector_add);
    for (int warps_per_sm : {8, 16, 32, 64}) {
        const size_t smem = smem_for_blocks_per_sm((const void*)vector_add, threads, warps_per_sm / 8);
        char name[64];
        std::snprintf(name, sizeof name, "vector_add_%02dwarps", warps_per_sm);
        samples.push_back({name, "vector_add", "vector_add", (const void*)vector_add, grid, block, smem,
                           streaming_bytes,
                           [=](WarpRecord* rec) {
                               vector_add<<<grid, block, smem>>>(d_a, d_b, d_c, per_thread, rec);
                           },
                           nullptr, [=] {
                               const std::vector<float> c = host_copy(d_c, n);
                               for (int i = 0; i < n; ++i)
                                   if (c[i] != ha[i] + hb[i]) return false;
                               return true;
                           }});
    }

    // Permutation a[i] = b[c[i]] with the identity and with a random permutation.
    std::vector<int> h_identity(n), h_random(n);
    std::vector<float> h_values(n);
    for (int i = 0; i < n; ++i) {
        h_identity[i] = i;
        h_values[i] = (float)i;  // exact: n = 2^24
    }
    h_random = h_identity;
    std::shuffle(h_random.begin(), h_random.end(), std::mt19937_64(20240601));
    float* d_values = device_copy(h_values);
    int* d_identity = device_copy(h_identity);
    int* d_random = device_copy(h_random);
    for (int random : {0, 1}) {
        const int* d_index = random ? d_random : d_identity;
        const std::vector<int>* h_index = random ? &h_random : &h_identity;
        samples.push_back({random ? "permute_random" : "permute_identity", "permutation", "permute",
                           (const void*)permute, grid, block, 0, streaming_bytes,
                           [=](WarpRecord* rec) {
                               permute<<<grid, block>>>(d_c, d_values, d_index, per_thread, rec);
                           },
                           nullptr, [=] {
                               const std::vector<float> a = host_copy(d_c, n);
                               for (int i = 0; i < n; ++i)
                                   if (a[i] != (float)(*h_index)[i]) return false;
                               return true;
                           }});
    }

    // Absolute value over all-positive and all-negative data.
    std::vector<float> h_positive(n), h_negative(n);
    for (int i = 0; i < n; ++i) {
        h_positive[i] = 1.0f + (float)(i % 100);
        h_negative[i] = -h_positive[i];
    }
    const float* hpos = h_positive.data();
    float* d_positive = device_copy(h_positive);
    float* d_negative = device_copy(h_negative);
    for (int negative : {0, 1}) {
        const float* d_in = negative ? d_negative : d_positive;
        samples.push_back({negative ? "abs_negative" : "abs_positive", "abs", "abs_values", (const void*)abs_values,
                           grid, block, 0, 2.0 * n * sizeof(float),
                           [=](WarpRecord* rec) { abs_values<<<grid, block>>>(d_in, d_c, per_thread, rec); },
                           nullptr,
                           [=] {
                               const std::vector<float> out = host_copy(d_c, n);
                               for (int i = 0; i < n; ++i)
                                   if (out[i] != hpos[i]) return false;
                               return true;
                           }});
    }

    // memcpy with 1, 2 and 4 independent loads per thread, at full occupancy.
    const struct {
        const char* name;
        const void* function;
        void (*kernel)(const float*, float*, int, WarpRecord*);
    } copies[] = {{"memcpy_1load", (const void*)memcpy_1load, memcpy_1load},
                  {"memcpy_2loads", (const void*)memcpy_2loads, memcpy_2loads},
                  {"memcpy_4loads", (const void*)memcpy_4loads, memcpy_4loads}};
    for (const auto& copy : copies) {
        auto kernel = copy.kernel;
        samples.push_back({copy.name, "memcpy", copy.name, copy.function, grid, block, 0,
                           2.0 * n * sizeof(float),
                           [=](WarpRecord* rec) { kernel<<<grid, block>>>(d_a, d_c, per_thread, rec); },
                           nullptr,
                           [=] {
                               const std::vector<float> out = host_copy(d_c, n);
                               for (int i = 0; i < n; ++i)
                                   if (out[i] != ha[i]) return false;
                               return true;
                           }});
    }

    // Black-Scholes over 2^22 options, 8 per thread, with IEEE math and with -use_fast_math.
    const int options = 1 << 22, options_per_thread = 8;
    const dim3 bs_grid(options / (threads * options_per_thread));
    const float riskfree = 0.02f, volatility = 0.30f;
    std::vector<float> h_price(options), h_strike(options), h_years(options);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> price(5.0f, 30.0f), strike(1.0f, 100.0f), years(0.25f, 10.0f);
    for (int i = 0; i < options; ++i) {
        h_price[i] = price(rng);
        h_strike[i] = strike(rng);
        h_years[i] = years(rng);
    }
    const float *hp = h_price.data(), *hs = h_strike.data(), *hy = h_years.data();
    float* d_price = device_copy(h_price);
    float* d_strike = device_copy(h_strike);
    float* d_years = device_copy(h_years);
    float *d_call = nullptr, *d_put = nullptr;
    CHECK(cudaMalloc(&d_call, options * sizeof(float)));
    CHECK(cudaMalloc(&d_put, options * sizeof(float)));
    for (int fast : {0, 1}) {
        auto launch_fn = fast ? black_scholes_fast_math_launch : black_scholes_launch;
        const void* function = fast ? black_scholes_fast_math_function() : black_scholes_function();
        samples.push_back({fast ? "black_scholes_fast_math" : "black_scholes", "black_scholes",
                           fast ? "black_scholes_fast_math" : "black_scholes", function, bs_grid, block, 0,
                           5.0 * options * sizeof(float),
                           [=](WarpRecord* rec) {
                               launch_fn(bs_grid, block, d_call, d_put, d_price, d_strike, d_years, riskfree,
                                         volatility, options_per_thread, rec);
                           },
                           nullptr, [=] {
                               const std::vector<float> call = host_copy(d_call, options);
                               for (int i = 0; i < options; i += 97) {
                                   const double want = black_scholes_call_reference(hp[i], hs[i], hy[i], riskfree, volatility);
                                   if (std::fabs(call[i] - want) > 1e-3 * std::max(1.0, std::fabs(want))) return false;
                               }
                               return true;
                           }});
    }

    // Block sums of 2^19 ints in blocks of 512, divergent (neighbored) and interleaved, in place.
    const int reduce_n = 1 << 19, reduce_threads = 512;
    const dim3 reduce_block(reduce_threads), reduce_grid(reduce_n / reduce_threads);
    std::vector<int> h_ints(reduce_n);
    for (int i = 0; i < reduce_n; ++i) h_ints[i] = i % 13;
    const int* hints = h_ints.data();
    int* d_ints_pristine = device_copy(h_ints);
    int *d_ints = nullptr, *d_sums = nullptr;
    CHECK(cudaMalloc(&d_ints, reduce_n * sizeof(int)));
    CHECK(cudaMalloc(&d_sums, reduce_grid.x * sizeof(int)));
    for (int interleaved : {0, 1}) {
        auto kernel = interleaved ? reduceInterleaved : reduceNeighbored;
        samples.push_back(
            {interleaved ? "reduce_interleaved" : "reduce_neighbored", "reduction",
             interleaved ? "reduceInterleaved" : "reduceNeighbored", (const void*)kernel, reduce_grid, reduce_block, 0,
             0.0,
             [=](WarpRecord* rec) {
                 kernel<<<reduce_grid, reduce_block>>>(d_ints, d_sums, (unsigned int)reduce_n, rec);
             },
             [=] {
                 CHECK(cudaMemcpy(d_ints, d_ints_pristine, reduce_n * sizeof(int), cudaMemcpyDeviceToDevice));
             },
             [=] {
                 const std::vector<int> sums = host_copy(d_sums, reduce_grid.x);
                 for (unsigned int b = 0; b < reduce_grid.x; ++b) {
                     long long want = 0;
                     for (int t = 0; t < reduce_threads; ++t) want += hints[b * reduce_threads + t];
                     if (sums[b] != want) return false;
                 }
                 return true;
             }});
    }

    // Imbalanced blocks: 2048 blocks of 256 threads; blocks 255, 511, ..., 2047 (8 blocks) work 16 times longer.
    const int imbalance_iterations = 256, heavy_every = 256, heavy_factor = 16;
    const dim3 imbalance_grid(2048);
    float* d_out = nullptr;
    CHECK(cudaMalloc(&d_out, (size_t)imbalance_grid.x * threads * sizeof(float)));
    samples.push_back({"imbalanced_blocks", "imbalanced", "imbalanced_blocks", (const void*)imbalanced_blocks,
                       imbalance_grid, block, 0, 0.0,
                       [=](WarpRecord* rec) {
                           imbalanced_blocks<<<imbalance_grid, block>>>(d_out, imbalance_iterations, heavy_every,
                                                                        heavy_factor, rec);
                       },
                       nullptr, [=] {
                           const std::vector<float> out = host_copy(d_out, (size_t)imbalance_grid.x * threads);
                           for (float v : out)
                               if (!std::isfinite(v)) return false;
                           return true;
                       }});

    bool all_ok = true;
    std::string group;
    for (const Sample& s : samples) {
        if (skipped(o, s.name)) continue;
        if (s.group != group) {
            if (!group.empty()) nvtxRangePop();
            group = s.group;
            nvtxRangePushA(group.c_str());
        }
        all_ok = run_sample(s, o) && all_ok;
    }
    if (!group.empty()) nvtxRangePop();
    CHECK(cudaDeviceSynchronize());
    std::printf(all_ok ? "all results correct\n" : "SOME RESULTS WRONG\n");
    return all_ok ? 0 : 1;
}
