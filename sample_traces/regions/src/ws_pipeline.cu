// ws_pipeline.cu - a warp-specialized producer/consumer kernel instrumented with tracekit's named regions (v2),
// and the markers' overhead measured on the GPU.
//
// Each block has one producer warp (warp 0) and four consumer warps. The producer copies tiles of `in` from global
// into a two-stage shared-memory ring; the consumers wait for a full stage, run `flops` dependent FMAs per element,
// and give the stage back. The hand-off uses named barriers (bar.sync / bar.arrive, ids 1-2 "full", 3-4 "empty"),
// as pre-TMA warp-specialized kernels did. Regions: setup, mainloop (enclosing the rest), wait_empty and load_tile
// (producer), wait_full and compute (consumers), epilogue (consumers).
//
// ws_pipeline OUT.csv [overhead.txt]: writes one traced launch as a tracekit warp-trace v2 CSV, then times the kernel
// (median of 50 launches, cudaEvent) with the markers compiled in and on, compiled in but off (null buffers) and,
// built with -DNO_REGIONS, compiled out; and a micro-benchmark of one begin/end pair (clock64 cycles per pair).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "warp_trace.cuh"

#ifdef NO_REGIONS
#undef WARP_REGION_BEGIN
#undef WARP_REGION_END
#define WARP_REGION_BEGIN(reg, id) (void)0
#define WARP_REGION_END(reg, id) (void)0
#endif

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        cudaError_t e_ = (call);                                                                        \
        if (e_ != cudaSuccess) {                                                                        \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                               \
        }                                                                                               \
    } while (0)

enum Region : unsigned { setup, mainloop, wait_empty, load_tile, wait_full, compute, epilogue, pair };
static const char* const REGION_NAMES[] = {"setup",     "mainloop", "wait_empty", "load_tile",
                                           "wait_full", "compute",  "epilogue",   "pair"};

constexpr int CONSUMER_WARPS = 4;
constexpr int THREADS = 32 * (1 + CONSUMER_WARPS);
constexpr int TILE_FLOAT4 = 1024;  // 16 KB per stage
constexpr int STAGES = 2;

__device__ __forceinline__ void bar_sync(int id, int count) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id, int count) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory"); }

__global__ void __launch_bounds__(THREADS) ws_pipeline(const float4* __restrict__ in, float* __restrict__ out, int tiles,
                                                       int flops, WarpRecord* rec, warp_trace::RegionBuffer regions) {
    WARP_TRACE_BEGIN(rec);
    warp_trace::WarpRegions reg = warp_trace::regions_init(regions);
    (void)reg;
    __shared__ float4 ring[STAGES][TILE_FLOAT4];
    WARP_REGION_BEGIN(reg, setup);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float4* src = in + (size_t)blockIdx.x * tiles * TILE_FLOAT4;
    float acc = 0.0f;
    WARP_REGION_END(reg, setup);
    WARP_REGION_BEGIN(reg, mainloop);
    if (warp == 0) {
        for (int k = 0; k < tiles; ++k) {
            const int s = k % STAGES;
            if (k >= STAGES) {
                WARP_REGION_BEGIN(reg, wait_empty);
                bar_sync(3 + s, THREADS);
                WARP_REGION_END(reg, wait_empty);
            }
            WARP_REGION_BEGIN(reg, load_tile);
            for (int i = lane; i < TILE_FLOAT4; i += 32) ring[s][i] = src[(size_t)k * TILE_FLOAT4 + i];
            WARP_REGION_END(reg, load_tile);
            bar_arrive(1 + s, THREADS);
        }
    } else {
        const int t = threadIdx.x - 32;
        for (int k = 0; k < tiles; ++k) {
            const int s = k % STAGES;
            WARP_REGION_BEGIN(reg, wait_full);
            bar_sync(1 + s, THREADS);
            WARP_REGION_END(reg, wait_full);
            WARP_REGION_BEGIN(reg, compute);
            for (int j = t; j < TILE_FLOAT4; j += 32 * CONSUMER_WARPS) {
                const float4 v = ring[s][j];
                float x = v.x + v.y + v.z + v.w;
                for (int f = 0; f < flops; ++f) x = fmaf(x, 0.999f, 0.001f);
                acc += x;
            }
            WARP_REGION_END(reg, compute);
            if (k + STAGES < tiles) bar_arrive(3 + s, THREADS);
        }
    }
    WARP_REGION_END(reg, mainloop);
    if (warp > 0) {
        WARP_REGION_BEGIN(reg, epilogue);
        out[(size_t)blockIdx.x * 32 * CONSUMER_WARPS + threadIdx.x - 32] = acc;
        WARP_REGION_END(reg, epilogue);
    }
    warp_trace::regions_flush(reg);
    WARP_TRACE_END(rec);
}

// `pairs` back-to-back empty regions per warp; each warp's leader stores the clock64 cycles the loop took.
__global__ void marker_cost(int pairs, long long* cycles, warp_trace::RegionBuffer regions) {
    warp_trace::WarpRegions reg = warp_trace::regions_init(regions);
    (void)reg;
    __syncwarp();
    const long long t0 = clock64();
    for (int i = 0; i < pairs; ++i) {
        WARP_REGION_BEGIN(reg, pair);
        asm volatile("" ::: "memory");
        WARP_REGION_END(reg, pair);
    }
    __syncwarp();
    const long long t1 = clock64();
    warp_trace::regions_flush(reg);
    if (threadIdx.x % 32 == 0) cycles[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = t1 - t0;
}

static float median_ms(dim3 grid, const float4* in, float* out, int tiles, int flops, WarpRecord* rec,
                       warp_trace::RegionBuffer regions) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<float> times;
    for (int i = 0; i < 55; ++i) {
        CHECK(cudaEventRecord(a));
        ws_pipeline<<<grid, THREADS>>>(in, out, tiles, flops, rec, regions);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (i >= 5) times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

int main(int argc, char** argv) {
    const char* csv = argc > 1 ? argv[1] : "ws_pipeline.csv";
    const char* report = argc > 2 ? argv[2] : nullptr;
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const dim3 grid(sms * 4), block(THREADS);
    const int tiles = 8, flops = 24;
    const size_t in_count = (size_t)grid.x * tiles * TILE_FLOAT4;
    float4* in;
    float* out;
    CHECK(cudaMalloc(&in, in_count * sizeof(float4)));
    CHECK(cudaMalloc(&out, (size_t)grid.x * 32 * CONSUMER_WARPS * sizeof(float)));
    CHECK(cudaMemset(in, 0, in_count * sizeof(float4)));
    const size_t warps = warp_trace::record_count(grid, block);
    WarpRecord* rec;
    CHECK(cudaMalloc(&rec, warps * sizeof(WarpRecord)));
    CHECK(cudaMemset(rec, 0, warps * sizeof(WarpRecord)));
    warp_trace::RegionBuffer regions = warp_trace::alloc_regions(grid, block, 64);
    const warp_trace::RegionBuffer off{nullptr, nullptr, 0};
    ws_pipeline<<<grid, block>>>(in, out, tiles, flops, nullptr, off);  // warm-up
    CHECK(cudaDeviceSynchronize());
#ifndef NO_REGIONS
    ws_pipeline<<<grid, block>>>(in, out, tiles, flops, rec, regions);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(warp_trace::write_csv_v2(csv, "ws_pipeline", (const void*)ws_pipeline, grid, block, 0, rec, regions,
                                   REGION_NAMES, 7));
#endif
    FILE* r = report ? std::fopen(report, "a") : stdout;
#ifdef NO_REGIONS
    std::fprintf(r, "ws_pipeline grid %u x %d threads, %d tiles, %d flops: markers compiled out: %.4f ms\n", grid.x,
                 THREADS, tiles, flops, median_ms(grid, in, out, tiles, flops, nullptr, off));
#else
    std::fprintf(r, "ws_pipeline grid %u x %d threads, %d tiles, %d flops: markers in, buffers null: %.4f ms\n",
                 grid.x, THREADS, tiles, flops, median_ms(grid, in, out, tiles, flops, nullptr, off));
    std::fprintf(r, "ws_pipeline grid %u x %d threads, %d tiles, %d flops: markers in and recording: %.4f ms\n",
                 grid.x, THREADS, tiles, flops, median_ms(grid, in, out, tiles, flops, rec, regions));
    // Micro-benchmark: cycles per begin/end pair, 1 warp per SM and 32 warps per SM (one 1024-thread block each).
    const int pairs = 512;
    for (int threads : {32, 1024}) {
        const dim3 g(sms), b(threads);
        warp_trace::RegionBuffer rb = warp_trace::alloc_regions(g, b, pairs);
        long long* cycles;
        const size_t n = (size_t)sms * threads / 32;
        CHECK(cudaMalloc(&cycles, n * sizeof(long long)));
        std::vector<long long> host(n);
        for (int on = 0; on < 2; ++on) {
            for (int rep = 0; rep < 3; ++rep) marker_cost<<<g, b>>>(pairs, cycles, on ? rb : off);
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(host.data(), cycles, n * sizeof(long long), cudaMemcpyDeviceToHost));
            std::sort(host.begin(), host.end());
            std::fprintf(r, "marker_cost %4d threads/SM, %s: median %.1f cycles per begin/end pair (max %.1f)\n",
                         threads, on ? "recording" : "buffers null", (double)host[n / 2] / pairs,
                         (double)host[n - 1] / pairs);
        }
        CHECK(cudaFree(cycles));
        warp_trace::free_regions(rb);
    }
#endif
    if (report) std::fclose(r);
    warp_trace::free_regions(regions);
    CHECK(cudaFree(rec));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    return 0;
}
