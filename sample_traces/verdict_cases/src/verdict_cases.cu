// Labelled verdict cases for tracekit (issue 11): one kernel per case, each with a known bound.
//
//   verdict_cases OUT_DIR [--case NAME[,NAME...]] [--launches K] [--no-trace] [--list]
//
// Each case runs K times (default 3): K-1 untraced launches (record pointer null), then one traced launch whose
// warp trace is written as OUT_DIR/<case>.csv (tracekit warp-trace v1) with its cudaEvent time. --no-trace runs
// all K untraced (what the ncu run uses). Each case sits in an NVTX range named after it. The expected verdicts and
// why are in ../labels.toml; the kernels only set up the situation, they never name it.
#include <cuda_fp16.h>
#include <mma.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "warp_trace.cuh"

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        cudaError_t check_err_ = (call);                                                                       \
        if (check_err_ != cudaSuccess) {                                                                       \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(check_err_)); \
            std::exit(1);                                                                                      \
        }                                                                                                      \
    } while (0)

// ---------------------------------------------------------------------------------------------------------------
// Memory kernels. Each block owns a contiguous chunk of blockDim * per_thread elements.

// One 4-byte load and one store per iteration, loop kept rolled: one load in flight per warp (ILP 1).
__global__ void stream_copy(const float* __restrict__ in, float* __restrict__ out, int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    extern __shared__ float pad[];  // only there to limit the occupancy
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        out[i] = in[i];
    }
    if (per_thread < 0) pad[threadIdx.x] = 0.0f;  // never true; keeps the array
    WARP_TRACE_END(rec);
}

// Four independent 4-byte loads per thread before any store (ILP 4).
__global__ void stream_copy_ilp4(const float* __restrict__ in, float* __restrict__ out, int per_thread,
                                 WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; k += 4) {
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = in[base + (size_t)(k + j) * blockDim.x];
#pragma unroll
        for (int j = 0; j < 4; ++j) out[base + (size_t)(k + j) * blockDim.x] = v[j];
    }
    WARP_TRACE_END(rec);
}

// One 16-byte (float4) load and store per iteration.
__global__ void stream_copy_vec4(const float4* __restrict__ in, float4* __restrict__ out, int per_thread,
                                 WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        out[i] = in[i];
    }
    WARP_TRACE_END(rec);
}

// stream_copy_ilp4's body with a dynamic shared array, for an occupancy sweep of one kernel (issue 19).
__global__ void copy_ilp4_padded(const float* __restrict__ in, float* __restrict__ out, int per_thread,
                                 WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    extern __shared__ float pad[];  // only there to limit the occupancy
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; k += 4) {
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = in[base + (size_t)(k + j) * blockDim.x];
#pragma unroll
        for (int j = 0; j < 4; ++j) out[base + (size_t)(k + j) * blockDim.x] = v[j];
    }
    if (per_thread < 0) pad[threadIdx.x] = 0.0f;  // never true; keeps the array
    WARP_TRACE_END(rec);
}

// Volkov: few warps, many independent 16-byte loads each (8 float4 in flight per thread).
__global__ void volkov_ilp_copy(const float4* __restrict__ in, float4* __restrict__ out, int per_thread,
                                WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    extern __shared__ float pad[];
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; k += 8) {
        float4 v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = in[base + (size_t)(k + j) * blockDim.x];
#pragma unroll
        for (int j = 0; j < 8; ++j) out[base + (size_t)(k + j) * blockDim.x] = v[j];
    }
    if (per_thread < 0) pad[threadIdx.x] = 0.0f;
    WARP_TRACE_END(rec);
}

// out[i] = table[index[i]] with a random permutation: one 32-byte sector per element, table larger than L2.
__global__ void random_gather(const float* __restrict__ table, const int* __restrict__ index, float* __restrict__ out,
                              int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 4
    for (int k = 0; k < per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        out[i] = table[index[i]];
    }
    WARP_TRACE_END(rec);
}

// Reads a working set far smaller than L2 `reps` times through L2 only (ld.global.cg skips L1): after the first
// pass every load hits L2. Four float4 loads in flight per thread.
__global__ void l2_resident_read(const float4* __restrict__ in, float* __restrict__ out, int per_thread, int reps,
                                 WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
    float acc = 0.0f;
#pragma unroll 1
    for (int r = 0; r < reps; ++r) {
#pragma unroll 1
        for (int k = 0; k < per_thread; k += 4) {
            float4 v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) v[j] = __ldcg(in + base + (size_t)(k + j) * blockDim.x);
#pragma unroll
            for (int j = 0; j < 4; ++j) acc += v[j].x + v[j].y + v[j].z + v[j].w;
        }
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = acc;
    WARP_TRACE_END(rec);
}

// out[i] = table[h(i)] with a hashed index (no index array to stream): every 4-byte load is its own 32-byte sector
// of a table far larger than L2; four independent loads in flight per thread (issue 20: the scattered ceiling).
__device__ __forceinline__ unsigned scatter_hash(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

__global__ void scattered_gather(const float* __restrict__ table, unsigned mask, float* __restrict__ out,
                                 int per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; k += 4) {
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = table[scatter_hash((unsigned)(base + (size_t)(k + j) * blockDim.x)) & mask];
#pragma unroll
        for (int j = 0; j < 4; ++j) out[base + (size_t)(k + j) * blockDim.x] = v[j];
    }
    WARP_TRACE_END(rec);
}

// Many 64-thread blocks with one element each: the SMs' block launch rate, not memory or math, sets the time.
__global__ void small_blocks(const float* __restrict__ in, float* __restrict__ out, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] * 2.0f;
    WARP_TRACE_END(rec);
}

// Too few blocks: a streaming copy by 8 blocks on a GPU of 132 SMs.
__global__ void few_blocks_copy(const float* __restrict__ in, float* __restrict__ out, int per_thread,
                                WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        out[i] = in[i];
    }
    WARP_TRACE_END(rec);
}

// ---------------------------------------------------------------------------------------------------------------
// Compute kernels. Eight independent chains per thread, so each warp has ILP 8 and 64 warps keep the pipes full.

__global__ void fma_bound(float* __restrict__ out, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j;
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int u = 0; u < 8; ++u)
#pragma unroll
            for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], 0.9999f, 0.0001f);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
    WARP_TRACE_END(rec);
}

// One wave exactly: the same FMA work, grid = blocks per SM x SMs (set by the host).
__global__ void one_wave_fma(float* __restrict__ out, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j;
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int u = 0; u < 8; ++u)
#pragma unroll
            for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], 0.9999f, 0.0001f);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
    WARP_TRACE_END(rec);
}

// Special functions (MUFU: __sinf, __expf -> MUFU.SIN/EX2) on independent chains.
__global__ void sfu_bound(float* __restrict__ out, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j * 0.1f;
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int j = 0; j < 8; ++j) a[j] = __sinf(a[j]);
#pragma unroll
        for (int j = 0; j < 8; ++j) a[j] = __expf(a[j]);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
    WARP_TRACE_END(rec);
}

// Double-precision FMAs on independent chains.
__global__ void fp64_bound(double* __restrict__ out, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    double a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3 + j;
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int j = 0; j < 8; ++j) a[j] = fma(a[j], 0.9999, 0.0001);
    }
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
    WARP_TRACE_END(rec);
}

// Tensor cores: wmma 16x16x16 half -> float, fragments in registers, four independent accumulators per warp.
__global__ void tensor_bound(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ out,
                             int iterations, WarpRecord* rec) {
    using namespace nvcuda;
    WARP_TRACE_BEGIN(rec);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
#pragma unroll
    for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[j], 0.0f);
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[j], fa, fb, acc[j]);
    }
#pragma unroll
    for (int j = 1; j < 4; ++j)
        for (int e = 0; e < acc[0].num_elements; ++e) acc[0].x[e] += acc[j].x[e];
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    wmma::store_matrix_sync(out + warp * 256, acc[0], 16, wmma::mem_row_major);
    WARP_TRACE_END(rec);
}

// Shared memory with a stride of 32 words: all 32 lanes of a warp hit one bank (32-way conflicts).
__global__ void bank_conflicts(float* __restrict__ out, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    __shared__ float tile[32 * 33 * 8];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float* mine = tile + warp * 32 * 33;
    for (int j = 0; j < 32; ++j) mine[lane * 32 + j] = lane + j;
    __syncwarp();
    float acc = 0.0f;
    int j = 0;
#pragma unroll 4
    for (int k = 0; k < iterations; ++k) {
        acc += mine[lane * 32 + j];  // stride 32 words: one bank for the whole warp
        j = (j + 1) & 31;
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = acc;
    WARP_TRACE_END(rec);
}

// Register spills: 64 live accumulators indexed by a runtime value, under __launch_bounds__(256, 8), which caps the
// kernel at 32 registers per thread.
__global__ void __launch_bounds__(256, 8) register_spills(const float* __restrict__ in, float* __restrict__ out,
                                                          int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    float a[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) a[j] = in[(threadIdx.x + j) & 255];
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) {
#pragma unroll
        for (int j = 0; j < 64; ++j) a[j] = fmaf(a[j], a[(j + 1) & 63], 0.5f);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 64; ++j) s += a[j];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
    WARP_TRACE_END(rec);
}

// Lane divergence: even and odd lanes take different FMA paths, so each path runs with 16 of 32 lanes.
__global__ void lane_divergence(float* __restrict__ out, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    float a[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) a[j] = threadIdx.x * 1e-3f + j;
    if (threadIdx.x & 1) {
#pragma unroll 1
        for (int k = 0; k < iterations; ++k)
#pragma unroll
            for (int u = 0; u < 8; ++u)
#pragma unroll
                for (int j = 0; j < 4; ++j) a[j] = fmaf(a[j], 0.9999f, 0.0001f);
    } else {
#pragma unroll 1
        for (int k = 0; k < iterations; ++k)
#pragma unroll
            for (int u = 0; u < 8; ++u)
#pragma unroll
                for (int j = 0; j < 4; ++j) a[j] = fmaf(a[j], 1.0001f, -0.0001f);
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = a[0] + a[1] + a[2] + a[3];
    WARP_TRACE_END(rec);
}

// Every thread adds to one address: the atomic unit of one L2 slice serializes them.
__global__ void atomics_one_address(unsigned int* __restrict__ counter, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) atomicAdd(counter, 1u);
    WARP_TRACE_END(rec);
}

// Barrier-heavy: each step writes one word to shared memory, waits at __syncthreads, reads a neighbour's word, and
// waits again; 1024-thread blocks.
__global__ void barrier_bound(float* __restrict__ out, int iterations, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    __shared__ float buf[1024];
    float x = threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < iterations; ++k) {
        buf[threadIdx.x] = x;
        __syncthreads();
        x += buf[(threadIdx.x + 1) & (blockDim.x - 1)];
        __syncthreads();
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = x;
    WARP_TRACE_END(rec);
}

// A dependent FMA chain; blocks heavy_every-1, 2*heavy_every-1, ... run heavy_factor times longer.
__global__ void imbalanced(float* __restrict__ out, int iterations, int heavy_every, int heavy_factor,
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

struct Case {
    std::string name;
    const char* kernel;
    const void* function;
    dim3 grid, block;
    size_t smem;
    double bytes;  // bytes the kernel must move (0: not a memory case), for the GB/s column
    std::function<void(WarpRecord*)> launch;
};

static int g_sm_count = 0;

// Dynamic shared memory per block that leaves room for exactly `blocks_per_sm` resident blocks (0: none needed).
static size_t smem_for_blocks_per_sm(const void* function, int threads, int blocks_per_sm) {
    int device = 0, optin = 0, resident = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CHECK(cudaFuncSetAttribute(function, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    CHECK(cudaFuncSetAttribute(function, cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, function, threads, 0));
    if (resident <= blocks_per_sm) return 0;
    for (int smem = optin / 1024 * 1024; smem >= 0; smem -= 1024) {
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, function, threads, smem));
        if (resident >= blocks_per_sm) return (size_t)smem;
    }
    return 0;
}

template <typename T>
static T* device_alloc(size_t n, int fill_byte = 0) {
    T* d = nullptr;
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    CHECK(cudaMemset(d, fill_byte, n * sizeof(T)));
    return d;
}

int main(int argc, char** argv) {
    std::string out_dir = ".", only;
    int launches = 3;
    bool trace = true, list = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--launches") && i + 1 < argc) {
            launches = std::max(1, std::atoi(argv[++i]));
        } else if (!std::strcmp(argv[i], "--no-trace")) {
            trace = false;
        } else if (!std::strcmp(argv[i], "--list")) {
            list = true;
        } else if (!std::strcmp(argv[i], "--case") && i + 1 < argc) {
            only = argv[++i];
        } else if (argv[i][0] != '-') {
            out_dir = argv[i];
        } else {
            std::fprintf(stderr, "usage: %s OUT_DIR [--case NAME[,NAME...]] [--launches K] [--no-trace] [--list]\n",
                         argv[0]);
            return 2;
        }
    }
    cudaDeviceProp prop;
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDeviceProperties(&prop, 0));
    g_sm_count = prop.multiProcessorCount;
    const int sms = g_sm_count;
    std::printf("device %s, CC %d.%d, %d SMs, L2 %d bytes\n", prop.name, prop.major, prop.minor, sms,
                prop.l2CacheSize);

    // Streaming arrays: 2^24 floats (64 MiB) each, beyond the 50 MB L2.
    const size_t n = 1 << 24;
    float* d_in = device_alloc<float>(n, 1);
    float* d_out = device_alloc<float>(n);
    const int threads = 256, per_thread = 32;
    const dim3 block(threads), grid((unsigned)(n / (threads * per_thread)));  // 2048 blocks
    std::vector<Case> cases;

    // 1. Plain copy at 8, 16, 32 and 64 warps per SM (1, 2, 4, 8 blocks of 8 warps), set with dynamic shared memory.
    for (int warps : {8, 16, 32, 64}) {
        const size_t smem = smem_for_blocks_per_sm((const void*)stream_copy, threads, warps / 8);
        char name[64];
        std::snprintf(name, sizeof name, "stream_occ%02d", warps);
        cases.push_back({name, "stream_copy", (const void*)stream_copy, grid, block, smem, 2.0 * n * 4,
                         [=](WarpRecord* r) { stream_copy<<<grid, block, smem>>>(d_in, d_out, per_thread, r); }});
    }
    // 2. Copy with ILP 4 and with float4 loads, full occupancy.
    cases.push_back({"stream_ilp4", "stream_copy_ilp4", (const void*)stream_copy_ilp4, grid, block, 0, 2.0 * n * 4,
                     [=](WarpRecord* r) { stream_copy_ilp4<<<grid, block>>>(d_in, d_out, per_thread, r); }});
    {
        const int pt = 8;  // 8 float4 per thread: 2^22 float4 / (256 * 8) = 2048 blocks
        const dim3 g((unsigned)(n / 4 / (threads * pt)));
        cases.push_back({"stream_vec4", "stream_copy_vec4", (const void*)stream_copy_vec4, g, block, 0, 2.0 * n * 4,
                         [=](WarpRecord* r) {
                             stream_copy_vec4<<<g, block>>>((const float4*)d_in, (float4*)d_out, pt, r);
                         }});
    }
    // 3. Volkov's low-occupancy copy: 8 warps per SM (one 256-thread block, padded), 8 float4 in flight per thread.
    {
        const int pt = 32;  // 2^22 float4 / (256 * 32) = 512 blocks
        const dim3 g((unsigned)(n / 4 / (threads * pt)));
        const size_t smem = smem_for_blocks_per_sm((const void*)volkov_ilp_copy, threads, 1);
        cases.push_back({"volkov_ilp_copy", "volkov_ilp_copy", (const void*)volkov_ilp_copy, g, block, smem,
                         2.0 * n * 4, [=](WarpRecord* r) {
                             volkov_ilp_copy<<<g, block, smem>>>((const float4*)d_in, (float4*)d_out, pt, r);
                         }});
    }
    // 4. Random gather over a 64 MiB table.
    std::vector<int> h_index(n);
    for (size_t i = 0; i < n; ++i) h_index[i] = (int)i;
    std::shuffle(h_index.begin(), h_index.end(), std::mt19937_64(20240601));
    int* d_index = nullptr;
    CHECK(cudaMalloc(&d_index, n * sizeof(int)));
    CHECK(cudaMemcpy(d_index, h_index.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    cases.push_back({"random_gather", "random_gather", (const void*)random_gather, grid, block, 0, 3.0 * n * 4,
                     [=](WarpRecord* r) { random_gather<<<grid, block>>>(d_in, d_index, d_out, per_thread, r); }});
    // 5. L2-resident reads: 17 MB (one wave of 132 x 8 blocks x 256 threads x 4 float4) read 64 times through L2.
    {
        const int pt = 4, reps = 64;
        const dim3 g(sms * 8);
        const double bytes = (double)g.x * threads * pt * 16 * reps;
        cases.push_back({"l2_resident", "l2_resident_read", (const void*)l2_resident_read, g, block, 0, bytes,
                         [=](WarpRecord* r) {
                             l2_resident_read<<<g, block>>>((const float4*)d_in, d_out, pt, reps, r);
                         }});
    }
    // 6. Small blocks: 16384 blocks of 64 threads, one element per thread.
    {
        const dim3 g(16384), b(64);
        cases.push_back({"small_blocks", "small_blocks", (const void*)small_blocks, g, b, 0, 2.0 * g.x * b.x * 4,
                         [=](WarpRecord* r) { small_blocks<<<g, b>>>(d_in, d_out, r); }});
    }
    // 7. Too few blocks: 8 blocks of 256 threads copying 8 x 256 x 256 floats.
    {
        const dim3 g(8);
        const int pt = 256;
        cases.push_back({"too_few_blocks", "few_blocks_copy", (const void*)few_blocks_copy, g, block, 0,
                         2.0 * g.x * threads * pt * 4,
                         [=](WarpRecord* r) { few_blocks_copy<<<g, block>>>(d_in, d_out, pt, r); }});
    }
    // 8. Compute-bound kernels: 4 waves of 256-thread blocks at full occupancy (8 blocks per SM).
    const dim3 cgrid(sms * 8 * 4);
    cases.push_back({"fma_bound", "fma_bound", (const void*)fma_bound, cgrid, block, 0, 0.0,
                     [=](WarpRecord* r) { fma_bound<<<cgrid, block>>>(d_out, 256, r); }});
    cases.push_back({"sfu_bound", "sfu_bound", (const void*)sfu_bound, cgrid, block, 0, 0.0,
                     [=](WarpRecord* r) { sfu_bound<<<cgrid, block>>>(d_out, 128, r); }});
    double* d_double = device_alloc<double>(cgrid.x * threads);
    cases.push_back({"fp64_bound", "fp64_bound", (const void*)fp64_bound, cgrid, block, 0, 0.0,
                     [=](WarpRecord* r) { fp64_bound<<<cgrid, block>>>(d_double, 64, r); }});
    half* d_half = device_alloc<half>(256);
    float* d_tensor_out = device_alloc<float>((size_t)cgrid.x * (threads / 32) * 256);
    cases.push_back({"tensor_bound", "tensor_bound", (const void*)tensor_bound, cgrid, block, 0, 0.0,
                     [=](WarpRecord* r) { tensor_bound<<<cgrid, block>>>(d_half, d_half, d_tensor_out, 256, r); }});
    cases.push_back({"bank_conflicts", "bank_conflicts", (const void*)bank_conflicts, cgrid, block, 0, 0.0,
                     [=](WarpRecord* r) { bank_conflicts<<<cgrid, block>>>(d_out, 128, r); }});
    cases.push_back({"register_spills", "register_spills", (const void*)register_spills, cgrid, block, 0, 0.0,
                     [=](WarpRecord* r) { register_spills<<<cgrid, block>>>(d_in, d_out, 64, r); }});
    cases.push_back({"lane_divergence", "lane_divergence", (const void*)lane_divergence, cgrid, block, 0, 0.0,
                     [=](WarpRecord* r) { lane_divergence<<<cgrid, block>>>(d_out, 256, r); }});
    unsigned int* d_counter = device_alloc<unsigned int>(1);
    {
        const dim3 g(sms * 8);  // one wave, 4 atomics per thread
        cases.push_back({"atomics_one_address", "atomics_one_address", (const void*)atomics_one_address, g, block, 0,
                         0.0, [=](WarpRecord* r) { atomics_one_address<<<g, block>>>(d_counter, 4, r); }});
    }
    {
        const dim3 g(sms * 2 * 4), b(1024);
        cases.push_back({"barrier_bound", "barrier_bound", (const void*)barrier_bound, g, b, 0, 0.0,
                         [=](WarpRecord* r) { barrier_bound<<<g, b>>>(d_out, 2048, r); }});
    }
    // 9. One saturated wave: exactly 8 blocks per SM of the FMA work, 8x longer per block.
    {
        const dim3 g(sms * 8);
        cases.push_back({"one_wave_saturated", "one_wave_fma", (const void*)one_wave_fma, g, block, 0, 0.0,
                         [=](WarpRecord* r) { one_wave_fma<<<g, block>>>(d_out, 1024, r); }});
    }
    // 10. Imbalanced blocks: 2048 blocks; blocks 255, 511, ... (8 of them) run 16 times longer.
    {
        const dim3 g(2048);
        cases.push_back({"imbalanced_blocks", "imbalanced", (const void*)imbalanced, g, block, 0, 0.0,
                         [=](WarpRecord* r) { imbalanced<<<g, block>>>(d_out, 256, 256, 16, r); }});
    }

    // 11. Issue 20 (ceilings): a hashed scattered gather over a 256 MiB table at full occupancy; a long copy at
    // 4 loads in flight per thread (~76% of nominal DRAM on the H100); 1024 tiny blocks per SM.
    const size_t big = (size_t)1 << 26;  // 256 MiB of floats
    float* d_big_in = device_alloc<float>(big, 1);
    float* d_big_out = device_alloc<float>(big);
    {
        const dim3 g((unsigned)(n / (threads * per_thread)));  // 2048 blocks, 32 loads per thread
        cases.push_back({"scattered_gather", "scattered_gather", (const void*)scattered_gather, g, block, 0,
                         36.0 * n, [=](WarpRecord* r) {
                             scattered_gather<<<g, block>>>(d_big_in, (unsigned)(big - 1), d_out, per_thread, r);
                         }});
    }
    {
        const dim3 g((unsigned)(big / (threads * per_thread)));  // 8192 blocks
        cases.push_back({"stream_near_ceiling", "stream_copy_ilp4", (const void*)stream_copy_ilp4, g, block, 0,
                         2.0 * big * 4, [=](WarpRecord* r) {
                             stream_copy_ilp4<<<g, block>>>(d_big_in, d_big_out, per_thread, r);
                         }});
    }
    {
        const dim3 g(sms * 1024), b(64);
        cases.push_back({"tiny_blocks_launch", "small_blocks", (const void*)small_blocks, g, b, 0,
                         2.0 * g.x * b.x * 4, [=](WarpRecord* r) { small_blocks<<<g, b>>>(d_big_in, d_big_out, r); }});
    }

    // 12. Issue 19: the ILP-4 copy (128 MiB, 4096 blocks) at 8, 32 and 64 warps per SM, set with dynamic shared
    // memory: one sweep family whose throughput stops growing before the device's 64 warps per SM.
    for (int warps : {8, 32, 64}) {
        const size_t half = big / 2;
        const dim3 g((unsigned)(half / (threads * per_thread)));  // 4096 blocks
        const size_t smem = smem_for_blocks_per_sm((const void*)copy_ilp4_padded, threads, warps / 8);
        char name[64];
        std::snprintf(name, sizeof name, "ilp4_occ%02d", warps);
        cases.push_back({name, "copy_ilp4_padded", (const void*)copy_ilp4_padded, g, block, smem, 2.0 * half * 4,
                         [=](WarpRecord* r) {
                             copy_ilp4_padded<<<g, block, smem>>>(d_big_in, d_big_out, per_thread, r);
                         }});
    }

    if (list) {
        for (const Case& c : cases) std::printf("%s\n", c.name.c_str());
        return 0;
    }
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (const Case& c : cases) {
        if (!only.empty() && ("," + only + ",").find("," + c.name + ",") == std::string::npos) continue;
        nvtxRangePushA(c.name.c_str());
        const size_t records = warp_trace::record_count(c.grid, c.block);
        WarpRecord* rec = nullptr;
        if (trace) {
            CHECK(cudaMalloc(&rec, records * sizeof(WarpRecord)));
            CHECK(cudaMemset(rec, 0, records * sizeof(WarpRecord)));
        }
        if (c.smem > 48 * 1024) {
            int optin = 0;
            CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
            CHECK(cudaFuncSetAttribute(c.function, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
        }
        float ms_untraced = -1.0f, ms_traced = -1.0f;
        for (int k = 0; k < launches; ++k) {
            const bool traced = trace && k == launches - 1;
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaEventRecord(start));
            c.launch(traced ? rec : nullptr);
            CHECK(cudaGetLastError());
            CHECK(cudaEventRecord(stop));
            CHECK(cudaEventSynchronize(stop));
            float ms = 0.0f;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            (traced ? ms_traced : ms_untraced) = ms;
        }
        if (trace) {
            const std::string path = out_dir + "/" + c.name + ".csv";
            CHECK(warp_trace::write_csv(path.c_str(), c.kernel, c.function, c.grid, c.block, c.smem, rec, 1,
                                        ms_traced * 1e6));
            CHECK(cudaFree(rec));
        }
        cudaFuncAttributes attr;
        CHECK(cudaFuncGetAttributes(&attr, c.function));
        const int t = c.block.x * c.block.y * c.block.z;
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c.function, t, c.smem));
        const double blocks = (double)c.grid.x * c.grid.y * c.grid.z;
        const double best_ms = ms_untraced > 0 ? ms_untraced : ms_traced;
        std::printf("%-22s %-20s grid %6.0f block %4d smem %6zu regs %3d local %5zu B blocks/SM %2d warps/SM %2d "
                    "waves %6.2f untraced %9.1f us traced %9.1f us",
                    c.name.c_str(), c.kernel, blocks, t, c.smem, attr.numRegs, attr.localSizeBytes, per_sm,
                    per_sm * ((t + 31) / 32), blocks / ((double)per_sm * sms), ms_untraced * 1e3, ms_traced * 1e3);
        if (c.bytes > 0) std::printf(" %8.1f GB/s", c.bytes / (best_ms * 1e-3) / 1e9);
        std::printf("\n");
        std::fflush(stdout);
        nvtxRangePop();
    }
    CHECK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
