// tracekit calibrate: microbenchmarks of the ceilings that matter to the latency-hiding model (issue 20).
// Prints one JSON object on stdout: device facts and, per sweep point, the work done and the seconds of each repeat;
// progress on stderr. tracekit/ceilings/calibrate.py builds it with nvcc, runs it and turns sweeps into ceilings
// (the plateau of each sweep, with the spread of its repeats).
//
//   calibrate [--quick] [--repeats N]
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                                        \
    do {                                                                                                   \
        cudaError_t err_ = (call);                                                                         \
        if (err_ != cudaSuccess) {                                                                         \
            std::fprintf(stderr, "calibrate: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            std::exit(1);                                                                                  \
        }                                                                                                  \
    } while (0)

static int g_sms = 0, g_repeats = 5;
static bool g_quick = false;
static std::vector<std::string> g_points;

static void progress(const char* what) {
    std::fprintf(stderr, "calibrate: %s\n", what);
    std::fflush(stderr);
}

// One sweep point: `amount` units of work (bytes, flops, blocks or launches) took `seconds` in each repeat.
static void emit(const char* sweep, const std::string& params, double amount, const char* unit,
                 const std::vector<double>& seconds) {
    std::string s = "{\"sweep\": \"" + std::string(sweep) + "\", \"params\": {" + params + "}, ";
    char buf[128];
    std::snprintf(buf, sizeof buf, "\"amount\": %.17g, \"unit\": \"%s\", \"seconds\": [", amount, unit);
    s += buf;
    for (size_t i = 0; i < seconds.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", seconds[i]);
        s += buf;
    }
    s += "]}";
    g_points.push_back(s);
}

static std::string kv(const char* key, double value) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "\"%s\": %.17g", key, value);
    return buf;
}

// Seconds of each repeat of `launch` (one warm-up first), timed with CUDA events around the launch alone.
template <class F>
static std::vector<double> time_repeats(F launch, int repeats) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<double> out;
    for (int r = 0; r < repeats; ++r) {
        CHECK(cudaEventRecord(a));
        launch();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaGetLastError());
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        out.push_back(ms * 1e-3);
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return out;
}

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// ---- DRAM streams: R reads and W writes per element of V (float, float2, float4: 32-, 64-, 128-bit loads and
// stores), ILP elements per thread in flight, grid = resident blocks, grid-stride. R:W = 1:0 read, 0:1 write, 1:1
// copy, 2:1 an elementwise add (c = a + b): DRAM turns the bus around between reads and writes, so each mix has
// its own plateau (issue 26).
__device__ __forceinline__ float vsum(float v) { return v; }
__device__ __forceinline__ float vsum(float2 v) { return v.x + v.y; }
__device__ __forceinline__ float vsum(float4 v) { return v.x + v.y + v.z + v.w; }
__device__ __forceinline__ float vadd(float a, float b) { return a + b; }
__device__ __forceinline__ float2 vadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float4 vadd(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
template <typename V> __device__ __forceinline__ V vfill(float x);
template <> __device__ __forceinline__ float vfill<float>(float x) { return x; }
template <> __device__ __forceinline__ float2 vfill<float2>(float x) { return make_float2(x, x); }
template <> __device__ __forceinline__ float4 vfill<float4>(float x) { return make_float4(x, x, x, x); }

template <typename V, int R, int W, int ILP>
__global__ void k_stream(const V* __restrict__ a, const V* __restrict__ b, V* __restrict__ c, size_t n, float* sink) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += ILP * stride) {
        V v[ILP];
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            if (R == 0) v[u] = vfill<V>((float)threadIdx.x);
            if (R >= 1) v[u] = a[i + u * stride];
            if (R >= 2) v[u] = vadd(v[u], b[i + u * stride]);
        }
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            if (W) c[i + u * stride] = v[u];
            else acc += vsum(v[u]);
        }
    }
    if (!W && acc == 1234.5f) sink[0] = acc;
}
// ---- DRAM random 32-byte sectors: independent 4-byte loads at hashed addresses over a table beyond L2 ----
__device__ __forceinline__ unsigned mix(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

template <int ILP>
__global__ void k_random(const float* __restrict__ t, unsigned mask, unsigned iters, float* sink) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (unsigned it = 0; it < iters; ++it) {
        float v[ILP];
#pragma unroll
        for (int u = 0; u < ILP; ++u) v[u] = __ldcg(t + (mix(tid * 0x9e3779b9u + (it * ILP + u) * 0x85ebca77u) & mask));
#pragma unroll
        for (int u = 0; u < ILP; ++u) acc += v[u];
    }
    if (acc == 1234.5f) sink[0] = acc;
}

// ---- L2-resident reads: a power-of-two footprint well inside L2, read over and over with 128-bit ld.global.cg
// (L1 bypassed); consecutive lanes read consecutive float4s (512 B per warp instruction), ILP loads in flight. ----
template <int ILP>
__global__ void k_l2(const float4* __restrict__ a, unsigned mask, unsigned iters, float* sink) {
    const unsigned threads = gridDim.x * blockDim.x, tid = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (unsigned it = 0; it < iters; ++it) {
        float4 v[ILP];
#pragma unroll
        for (int u = 0; u < ILP; ++u) v[u] = __ldcg(a + ((tid + (it * ILP + u) * threads) & mask));
#pragma unroll
        for (int u = 0; u < ILP; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    if (acc == 1234.5f) sink[0] = acc;
}

// ---- Shared memory: conflict-free 4-byte loads (a warp reads 32 consecutive words: 128 B per instruction) ----
template <int ILP>
__global__ void k_shared(float* sink, int iters) {
    __shared__ float s[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = (float)i;
    __syncthreads();
    float acc[ILP];
#pragma unroll
    for (int u = 0; u < ILP; ++u) acc[u] = 0.0f;
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned base = (unsigned)__cvta_generic_to_shared(s);
#pragma unroll 4
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            // asm volatile: the compiler must not hoist loads of unchanged shared memory out of the loop
            const unsigned addr = base + ((lane + ((unsigned)(it * ILP + u) + warp) * 32u) & 2047u) * 4u;
            float v;
            asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
            acc[u] += v;
        }
    }
    float total = 0.0f;
#pragma unroll
    for (int u = 0; u < ILP; ++u) total += acc[u];
    if (total == 1234.5f) sink[0] = total;
}

// The same with 16-byte loads: a warp reads 512 consecutive bytes per instruction (4 wavefronts, no conflicts).
template <int ILP>
__global__ void k_shared4(float* sink, int iters) {
    __shared__ float4 s[512];
    for (int i = threadIdx.x; i < 512; i += blockDim.x) s[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    float4 acc[ILP];
#pragma unroll
    for (int u = 0; u < ILP; ++u) acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned base = (unsigned)__cvta_generic_to_shared(s);
#pragma unroll 2
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            const unsigned addr = base + ((lane + ((unsigned)(it * ILP + u) + warp) * 32u) & 511u) * 16u;
            float4 v;
            asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                         : "r"(addr));
            acc[u].x += v.x, acc[u].y += v.y, acc[u].z += v.z, acc[u].w += v.w;
        }
    }
    float total = 0.0f;
#pragma unroll
    for (int u = 0; u < ILP; ++u) total += acc[u].x + acc[u].y + acc[u].z + acc[u].w;
    if (total == 1234.5f) sink[0] = total;
}

// ---- FP32 FMA and FP64 FMA: ILP independent dependency chains per thread ----
template <typename T, int ILP>
__global__ void k_fma(T* sink, int iters, T a, T b) {
    T x[ILP];
#pragma unroll
    for (int u = 0; u < ILP; ++u) x[u] = (T)(threadIdx.x + u);
#pragma unroll 8
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < ILP; ++u) x[u] = x[u] * a + b;
    }
    T total = 0;
#pragma unroll
    for (int u = 0; u < ILP; ++u) total += x[u];
    if (total == (T)1234.5) sink[0] = total;
}

// ---- Tensor cores through mma.sync (a lower bound on Hopper, whose full rate needs wgmma: cuBLAS is timed too) ----
template <int KIND, int ILP>
__global__ void k_mma(float* sink, int iters) {
    unsigned a0 = 0x3c003c00u ^ threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, b0 = a0 + 4, b1 = a0 + 5;
    float d[ILP][4];
#pragma unroll
    for (int u = 0; u < ILP; ++u) d[u][0] = d[u][1] = d[u][2] = d[u][3] = 0.0f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            if (KIND == 0) {
                asm volatile(
                    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                    "{%0,%1,%2,%3};"
                    : "+f"(d[u][0]), "+f"(d[u][1]), "+f"(d[u][2]), "+f"(d[u][3])
                    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            } else if (KIND == 1) {
                asm volatile(
                    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                    "{%0,%1,%2,%3};"
                    : "+f"(d[u][0]), "+f"(d[u][1]), "+f"(d[u][2]), "+f"(d[u][3])
                    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            } else {
#if __CUDA_ARCH__ >= 890
                asm volatile(
                    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                    "{%0,%1,%2,%3};"
                    : "+f"(d[u][0]), "+f"(d[u][1]), "+f"(d[u][2]), "+f"(d[u][3])
                    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
            }
        }
    }
    float total = 0.0f;
#pragma unroll
    for (int u = 0; u < ILP; ++u) total += d[u][0] + d[u][1] + d[u][2] + d[u][3];
    if (total == 1234.5f) sink[0] = total;
}

// ---- Block launch rate: blocks that do almost nothing, many waves of them ----
__global__ void k_empty(float* sink) {
    if (threadIdx.x == 1u << 30) sink[0] = 0.0f;
}

// ---- DRAM loaded latency: warp 0 lane 0 of each block chases pointers while the block's other warps stream ----
// reads at a rate set by __nanosleep between batches of 4 float4 loads. Each probe records its mean step time.
__global__ void k_probe(const unsigned* __restrict__ chase, unsigned mask, unsigned steps,
                        const float4* __restrict__ stream, size_t stream_n, unsigned sleep_ns,
                        unsigned long long* probe_ns, unsigned long long* bytes, unsigned* sink, unsigned seed) {
    __shared__ volatile int done;
    if (threadIdx.x == 0) done = 0;
    __syncthreads();
    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            unsigned idx = mix(blockIdx.x * 7919u + seed * 104729u + 1u) & mask;
            const unsigned long long t0 = globaltimer();
            for (unsigned s = 0; s < steps; ++s) idx = __ldcg(chase + idx);
            const unsigned long long t1 = globaltimer();
            probe_ns[blockIdx.x] = t1 - t0;
            if (idx == 0xffffffffu) sink[0] = idx;
            done = 1;
        }
        return;
    }
    const size_t streamers = (size_t)gridDim.x * (blockDim.x - 32);
    const size_t first = (size_t)blockIdx.x * (blockDim.x - 32) + threadIdx.x - 32;
    size_t i = first;
    unsigned long long loads = 0;
    float acc = 0.0f;
    while (!done) {
        if (i + 3 * streamers >= stream_n) i = first;
        const float4 v0 = __ldcg(stream + i), v1 = __ldcg(stream + i + streamers),
                     v2 = __ldcg(stream + i + 2 * streamers), v3 = __ldcg(stream + i + 3 * streamers);
        acc += v0.x + v1.y + v2.z + v3.w;
        loads += 4;
        i += 4 * streamers;
        if (sleep_ns) __nanosleep(sleep_ns);
    }
    atomicAdd(bytes, loads * 16ull);
    if (acc == 1234.5f) sink[1] = 1;
}

__global__ void k_fill_chase(unsigned* chase, size_t n) {
    // x -> a x + c mod 2^k with c odd and a = 1 mod 4 visits every index once (Hull-Dobell): one cycle over the table.
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        chase[i] = (unsigned)((i * 1664525ull + 1013904223ull) & (n - 1));
}

static int resident_blocks(const void* f, int threads, size_t smem = 0) {
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, smem));
    return per_sm;
}

static const char* mix_sweep(int reads, int writes) {
    if (reads == 1 && writes == 0) return "dram_read";
    if (reads == 0 && writes == 1) return "dram_write";
    if (reads == 1 && writes == 1) return "dram_copy";
    return "dram_add";  // 2 reads : 1 write
}

// One point of the DRAM stream sweep: a, b, c are `bytes` each, far beyond L2.
template <typename V, int R, int W, int ILP>
static void stream_point(const void* a, const void* b, void* c, size_t bytes, float* sink, int bpsm) {
    const int threads = 256;
    const unsigned grid = g_sms * bpsm;
    const size_t n = bytes / sizeof(V), chunk = (size_t)grid * threads * ILP, m = n / chunk * chunk;
    auto sec = time_repeats(
        [&] { k_stream<V, R, W, ILP><<<grid, threads>>>((const V*)a, (const V*)b, (V*)c, m, sink); }, g_repeats);
    // bytes each SM has requested and not yet received (loads; stores for a write-only stream): Little's law's
    // concurrency at this point
    const double in_flight = (double)bpsm * threads * ILP * sizeof(V) * (R ? R : W);
    emit(mix_sweep(R, W),
         kv("warps_per_sm", bpsm * threads / 32) + ", " + kv("ilp", ILP) + ", " + kv("width_bytes", sizeof(V)) +
             ", " + kv("reads", R) + ", " + kv("writes", W) + ", " + kv("bytes_in_flight_per_sm", in_flight),
         (double)m * sizeof(V) * (R + W), "byte", sec);
}

template <typename V, int R, int W>
static void stream_mix(const void* a, const void* b, void* c, size_t bytes, float* sink,
                       const std::vector<int>& occupancy) {
    for (int bpsm : occupancy) {
        stream_point<V, R, W, 1>(a, b, c, bytes, sink, bpsm);
        if (!g_quick) stream_point<V, R, W, 2>(a, b, c, bytes, sink, bpsm);
        stream_point<V, R, W, 4>(a, b, c, bytes, sink, bpsm);
        if (!g_quick) stream_point<V, R, W, 8>(a, b, c, bytes, sink, bpsm);
    }
}

template <typename V>
static void stream_width(const void* a, const void* b, void* c, size_t bytes, float* sink,
                         const std::vector<int>& occupancy) {
    stream_mix<V, 1, 0>(a, b, c, bytes, sink, occupancy);
    stream_mix<V, 1, 1>(a, b, c, bytes, sink, occupancy);
    stream_mix<V, 2, 1>(a, b, c, bytes, sink, occupancy);
    stream_mix<V, 0, 1>(a, b, c, bytes, sink, occupancy);
}

template <int ILP>
static void random_point(const float* t, unsigned mask, float* sink, int bpsm) {
    const int threads = 256;
    const unsigned grid = g_sms * bpsm, iters = g_quick ? 64 : 256;
    auto sec = time_repeats([&] { k_random<ILP><<<grid, threads>>>(t, mask, iters, sink); }, g_repeats);
    emit("dram_random_sector", kv("warps_per_sm", bpsm * 8) + ", " + kv("ilp", ILP),
         (double)grid * threads * iters * ILP * 32.0, "byte", sec);
}

template <int ILP>
static void l2_point(const float4* a, size_t footprint_bytes, float* sink, int bpsm) {
    const int threads = 256;
    const unsigned grid = g_sms * bpsm;
    const double total = g_quick ? 1e9 : 4e9;  // bytes per timed launch: ~0.5 ms at L2 rates, ramp-up negligible
    const unsigned iters = std::max(8u, (unsigned)(total / ((double)grid * threads * ILP * 16.0)));
    const unsigned mask = (unsigned)(footprint_bytes / 16 - 1);
    auto sec = time_repeats([&] { k_l2<ILP><<<grid, threads>>>(a, mask, iters, sink); }, g_repeats);
    emit("l2_read",
         kv("warps_per_sm", bpsm * 8) + ", " + kv("ilp", ILP) + ", " + kv("buffer_bytes", (double)footprint_bytes) +
             ", " + kv("bytes_in_flight_per_sm", (double)bpsm * threads * ILP * 16.0),
         (double)grid * threads * iters * ILP * 16.0, "byte", sec);
}

template <int ILP>
static void shared_point(float* sink, int bpsm) {
    const int threads = 256, iters = g_quick ? 2048 : 8192;
    const unsigned grid = g_sms * bpsm * 4;
    auto sec = time_repeats([&] { k_shared<ILP><<<grid, threads>>>(sink, iters); }, g_repeats);
    emit("shared_read", kv("warps_per_sm", bpsm * 8) + ", " + kv("ilp", ILP) + ", " + kv("load_bytes", 4),
         (double)grid * threads * iters * ILP * 4.0, "byte", sec);
    auto sec4 = time_repeats([&] { k_shared4<ILP><<<grid, threads>>>(sink, iters / 2); }, g_repeats);
    emit("shared_read", kv("warps_per_sm", bpsm * 8) + ", " + kv("ilp", ILP) + ", " + kv("load_bytes", 16),
         (double)grid * threads * (iters / 2) * ILP * 16.0, "byte", sec4);
}

template <typename T, int ILP>
static void fma_point(const char* sweep, T* sink, int bpsm) {
    const int threads = 256, iters = g_quick ? 4096 : 16384;
    const unsigned grid = g_sms * bpsm * 4;
    auto sec = time_repeats([&] { k_fma<T, ILP><<<grid, threads>>>(sink, iters, (T)0.999, (T)0.001); }, g_repeats);
    emit(sweep, kv("warps_per_sm", bpsm * 8) + ", " + kv("ilp", ILP), 2.0 * grid * threads * iters * ILP, "flop", sec);
}

template <int KIND, int ILP>
static void mma_point(const char* sweep, float* sink, int bpsm) {
    const int threads = 256, iters = g_quick ? 1024 : 4096;
    const unsigned grid = g_sms * bpsm * 4;
    const double per_mma = KIND == 2 ? 2.0 * 16 * 8 * 32 : 2.0 * 16 * 8 * 16;
    auto sec = time_repeats([&] { k_mma<KIND, ILP><<<grid, threads>>>(sink, iters); }, g_repeats);
    emit(sweep, kv("warps_per_sm", bpsm * 8) + ", " + kv("ilp", ILP), per_mma * (grid * threads / 32) * iters * ILP,
         "flop", sec);
}

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick")) {
            g_quick = true;
        } else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) {
            g_repeats = std::max(2, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: %s [--quick] [--repeats N]\n", argv[0]);
            return 2;
        }
    }
    if (g_quick && g_repeats > 3) g_repeats = 3;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::fprintf(stderr, "calibrate: no CUDA device\n");
        return 3;
    }
    cudaDeviceProp prop;
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    int driver = 0, runtime = 0;
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));
    std::fprintf(stderr, "calibrate: %s, CC %d.%d, %d SMs, L2 %d bytes\n", prop.name, prop.major, prop.minor, g_sms,
                 prop.l2CacheSize);

    const size_t big = (g_quick ? 256ull : 1024ull) << 20;  // bytes per streaming buffer, far beyond L2
    float4 *a = nullptr, *b = nullptr, *c = nullptr;
    float* sink = nullptr;
    unsigned* chase = nullptr;
    CHECK(cudaMalloc(&a, big));
    CHECK(cudaMalloc(&b, big));
    CHECK(cudaMalloc(&c, big));
    CHECK(cudaMalloc(&chase, big));
    CHECK(cudaMalloc(&sink, 1 << 20));
    CHECK(cudaMemset(a, 0, big));
    CHECK(cudaMemset(b, 0, big));
    CHECK(cudaMemset(c, 0, big));
    CHECK(cudaMemset(sink, 0, 1 << 20));
    const size_t n4 = big / 16;
    const size_t chase_n = big / 4;  // a power of two
    k_fill_chase<<<g_sms * 8, 256>>>(chase, chase_n);
    CHECK(cudaDeviceSynchronize());

    const std::vector<int> occupancy = g_quick ? std::vector<int>{2, 8} : std::vector<int>{1, 2, 4, 8};
    progress("DRAM streams (32-, 64-, 128-bit loads and stores; read, copy, add, write; ILP x occupancy)");
    stream_width<float4>(a, b, c, big, sink, occupancy);
    if (!g_quick) {
        stream_width<float2>(a, b, c, big, sink, occupancy);
        stream_width<float>(a, b, c, big, sink, occupancy);
    }
    progress("DRAM random 32-byte sectors");
    for (int bpsm : occupancy) {
        random_point<1>((const float*)chase, (unsigned)(chase_n - 1), sink, bpsm);
        random_point<4>((const float*)chase, (unsigned)(chase_n - 1), sink, bpsm);
        if (!g_quick) random_point<8>((const float*)chase, (unsigned)(chase_n - 1), sink, bpsm);
    }
    progress("L2-resident reads (footprints inside L2, 128-bit loads, ILP x occupancy)");
    {
        // power-of-two footprints from 1/16 to about 1/3 of L2 (never past 1/2: each of Hopper's two L2 partitions
        // holds half)
        std::vector<size_t> footprints;
        for (size_t f = 1ull << 20; f * 3 <= (size_t)prop.l2CacheSize; f *= 2)
            if (f * 16 >= (size_t)prop.l2CacheSize) footprints.push_back(f);
        if (footprints.empty()) footprints.push_back(1ull << 20);
        if (g_quick) footprints = {footprints.back()};
        for (size_t f : footprints) {
            for (int bpsm : g_quick ? std::vector<int>{8} : std::vector<int>{2, 4, 8}) {
                l2_point<2>(a, f, sink, bpsm);
                l2_point<4>(a, f, sink, bpsm);
                if (!g_quick) l2_point<8>(a, f, sink, bpsm);
            }
        }
    }
    progress("shared memory");
    for (int bpsm : occupancy) {
        shared_point<4>(sink, bpsm);
        shared_point<8>(sink, bpsm);
    }
    progress("FP32 and FP64 FMA");
    for (int bpsm : occupancy) {
        fma_point<float, 4>("fp32_fma", sink, bpsm);
        fma_point<float, 8>("fp32_fma", sink, bpsm);
        fma_point<double, 4>("fp64_fma", (double*)sink, bpsm);
        fma_point<double, 8>("fp64_fma", (double*)sink, bpsm);
    }
    progress("tensor cores (mma.sync)");
    for (int bpsm : occupancy) {
        mma_point<0, 4>("tensor_mma_sync_fp16", sink, bpsm);
        mma_point<1, 4>("tensor_mma_sync_bf16", sink, bpsm);
        if (prop.major * 10 + prop.minor >= 89) mma_point<2, 4>("tensor_mma_sync_fp8", sink, bpsm);
    }
    progress("block launch rate");
    for (int threads : {32, 64, 128, 256, 512, 1024}) {
        const int per_sm = resident_blocks((const void*)k_empty, threads);
        const unsigned grid = g_sms * (g_quick ? 500 : 2000);
        auto sec = time_repeats([&] { k_empty<<<grid, threads>>>(sink); }, g_repeats);
        emit("block_launch", kv("threads", threads) + ", " + kv("resident_blocks_per_sm", per_sm),
             (double)grid / g_sms, "block_per_sm", sec);
    }
    progress("kernel launch overhead");
    {
        const int launches = g_quick ? 200 : 2000;
        auto sec = time_repeats(
            [&] {
                for (int k = 0; k < launches; ++k) k_empty<<<1, 32>>>(sink);
            },
            g_repeats);
        emit("launch_back_to_back", kv("launches", launches), launches, "launch", sec);
        std::vector<double> sync;
        for (int r = 0; r < g_repeats; ++r) {
            const int k_n = 100;
            auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < k_n; ++k) {
                k_empty<<<1, 32>>>(sink);
                CHECK(cudaStreamSynchronize(0));
            }
            sync.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        emit("launch_and_sync", kv("launches", 100), 100, "launch", sync);
        cudaStream_t stream;
        CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        const int in_graph = 500;
        CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        for (int k = 0; k < in_graph; ++k) k_empty<<<1, 32, 0, stream>>>(sink);
        CHECK(cudaStreamEndCapture(stream, &graph));
        CHECK(cudaGraphInstantiate(&exec, graph, 0));
        cudaEvent_t g0, g1;
        CHECK(cudaEventCreate(&g0));
        CHECK(cudaEventCreate(&g1));
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaStreamSynchronize(stream));
        std::vector<double> graph_sec;
        for (int r = 0; r < g_repeats; ++r) {
            CHECK(cudaEventRecord(g0, stream));
            CHECK(cudaGraphLaunch(exec, stream));
            CHECK(cudaEventRecord(g1, stream));
            CHECK(cudaEventSynchronize(g1));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, g0, g1));
            graph_sec.push_back(ms * 1e-3);
        }
        emit("launch_in_graph", kv("launches", in_graph), in_graph, "launch", graph_sec);
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(graph));
        CHECK(cudaStreamDestroy(stream));
    }
    progress("DRAM loaded latency (pointer chase under background streams)");
    {
        unsigned long long *probe_ns = nullptr, *bytes = nullptr;
        const int max_blocks = g_sms * 8;
        CHECK(cudaMalloc(&probe_ns, max_blocks * sizeof(unsigned long long)));
        CHECK(cudaMalloc(&bytes, sizeof(unsigned long long)));
        const unsigned steps = g_quick ? 256 : 1024;
        struct Load { int bpsm; unsigned sleep_ns; };
        std::vector<Load> loads = {{0, 0}};
        for (int bpsm : occupancy)
            for (unsigned s : g_quick ? std::vector<unsigned>{1000, 0} : std::vector<unsigned>{16000, 4000, 2000, 1000, 0})
                loads.push_back({bpsm, s});
        std::vector<unsigned long long> h_probe(max_blocks);
        unsigned seed = 0;
        for (const Load& l : loads) {
            const unsigned grid = l.bpsm ? g_sms * l.bpsm : 1, threads = l.bpsm ? 256 : 32;
            std::vector<double> sec, lat, thr;
            for (int r = 0; r < g_repeats + 1; ++r) {
                CHECK(cudaMemset(bytes, 0, sizeof(unsigned long long)));
                cudaEvent_t e0, e1;
                CHECK(cudaEventCreate(&e0));
                CHECK(cudaEventCreate(&e1));
                CHECK(cudaEventRecord(e0));
                k_probe<<<grid, threads>>>(chase, (unsigned)(chase_n - 1), steps, b, n4, l.sleep_ns, probe_ns, bytes,
                                           (unsigned*)sink, ++seed);
                CHECK(cudaEventRecord(e1));
                CHECK(cudaEventSynchronize(e1));
                CHECK(cudaGetLastError());
                float ms = 0;
                CHECK(cudaEventElapsedTime(&ms, e0, e1));
                unsigned long long h_bytes = 0;
                CHECK(cudaMemcpy(&h_bytes, bytes, sizeof h_bytes, cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(h_probe.data(), probe_ns, grid * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
                double mean_ns = 0;
                for (unsigned k = 0; k < grid; ++k) mean_ns += (double)h_probe[k] / steps;
                mean_ns /= grid;
                CHECK(cudaEventDestroy(e0));
                CHECK(cudaEventDestroy(e1));
                if (r == 0) continue;  // warm-up
                sec.push_back(ms * 1e-3);
                lat.push_back(mean_ns);
                thr.push_back(h_bytes / (ms * 1e-3));
            }
            std::string p = kv("background_warps_per_sm", l.bpsm * 7) + ", " + kv("sleep_ns", l.sleep_ns) +
                            ", " + kv("probes", grid) + ", " + kv("steps", steps) + ", \"latency_ns\": [";
            for (size_t k = 0; k < lat.size(); ++k) p += (k ? ", " : "") + std::to_string(lat[k]);
            p += "], \"throughput_bytes_per_s\": [";
            for (size_t k = 0; k < thr.size(); ++k) p += (k ? ", " : "") + std::to_string(thr[k]);
            p += "]";
            emit("dram_loaded_latency", p, 0.0, "byte", sec);
        }
    }

    std::printf("{\n\"device\": {\"name\": \"%s\", \"compute_capability\": \"%d.%d\", \"sm_count\": %d, "
                "\"l2_bytes\": %d, \"max_threads_per_sm\": %d, \"shared_bytes_per_sm\": %zu, "
                "\"global_memory_bytes\": %zu, \"memory_bus_bits\": %d},\n",
                prop.name, prop.major, prop.minor, g_sms, prop.l2CacheSize, prop.maxThreadsPerMultiProcessor,
                prop.sharedMemPerMultiprocessor, prop.totalGlobalMem, prop.memoryBusWidth);
    size_t fetch = 0;
    if (cudaDeviceGetLimit(&fetch, cudaLimitMaxL2FetchGranularity) != cudaSuccess) fetch = 0;
    std::printf("\"driver_version\": %d, \"runtime_version\": %d, \"repeats\": %d, \"quick\": %s,\n", driver, runtime,
                g_repeats, g_quick ? "true" : "false");
    std::printf("\"l2_fetch_granularity_bytes\": %zu,\n", fetch);
    std::printf("\"points\": [\n");
    for (size_t i = 0; i < g_points.size(); ++i) std::printf("%s%s\n", g_points[i].c_str(), i + 1 < g_points.size() ? "," : "");
    std::printf("]\n}\n");
    return 0;
}
