// sweeps.cu: the occupancy / block-size / ILP / grid sweep set behind `tracekit predict` (issue 21).
// Four kinds of kernel, each a grid-stride loop over a fixed amount of work, so the block size, the grid and the
// warps per SM can change while the work stays the same:
//   sweep_copy          streaming copy, one float read and one written per element
//   sweep_fma           compute-bound: one dependent FMA chain per element (FP32 pipe)
//   sweep_gather        scattered: out[i] = table[idx[i]], random idx over a table 2.5x the L2
//   sweep_read_ilp<K>   streaming read with K independent loads in flight per thread (K = 1, 2, 4, 8)
// Each kernel runs at 8 occupancies (block 256; 1..8 blocks per SM set by dynamic shared-memory padding), at 5 block
// sizes with no padding (64..1024, the most warps per SM), and at 3 grids (0.25, 1 and 1.5 waves at block 256).
// Times: CUDA events, median of RUNS runs after a warm-up, L2 flushed (256 MB memset) before each run of every
// kernel. With --ncu, each configuration is launched once (no flush, no warm-up) inside an NVTX range of its name,
// for Nsight Compute. Writes the table of configurations and timings to stdout as CSV.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const long long N_COPY = 1LL << 25;     // 128 MiB read + 128 MiB written
static const long long N_FMA = 1LL << 21;      // 2M elements x FMA_ITERS dependent FMAs
static const int FMA_ITERS = 1024;
static const long long N_GATHER = 1LL << 24;   // 16M gathers
static const long long N_TABLE = 1LL << 25;    // 128 MiB table (L2 is 50 MB)
static const long long N_READ = 1LL << 26;     // 256 MiB read

extern __shared__ float pad_smem[];
// __launch_bounds__(1024, 2): at most 32 registers, so every kernel can hold 64 warps per SM (the register file
// never limits the sweep; dynamic shared memory does).

__global__ void __launch_bounds__(1024, 2) sweep_copy(const float* __restrict__ in, float* __restrict__ out, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
    if (n < 0) pad_smem[threadIdx.x] = 0.f;  // keeps the dynamic smem symbol referenced
}

__global__ void __launch_bounds__(1024, 2) sweep_fma(const float* __restrict__ in, float* __restrict__ out, long long n, float b, float c) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float a = in[i];
#pragma unroll 16
        for (int k = 0; k < FMA_ITERS; ++k) a = fmaf(a, b, c);
        out[i] = a;
    }
    if (n < 0) pad_smem[threadIdx.x] = 0.f;
}

__global__ void __launch_bounds__(1024, 2) sweep_gather(const float* __restrict__ table, const int* __restrict__ idx, float* __restrict__ out,
                             long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = table[idx[i]];
    if (n < 0) pad_smem[threadIdx.x] = 0.f;
}

// K independent loads per thread per step (element i, i + stride, ... i + (K-1) * stride), summed, one store.
template <int K>
__global__ void __launch_bounds__(1024, 2) sweep_read_ilp(const float* __restrict__ in, float* __restrict__ out, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    for (long long i = tid; i < n; i += stride * K) {
        float v[K];
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = (i + k * stride < n) ? in[i + k * stride] : 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) s += v[k];
    }
    out[tid] = s;
    if (n < 0) pad_smem[threadIdx.x] = 0.f;
}

struct Kernel {
    const char* name;
    const void* fn;
    int ilp;
    long long n;            // elements of work
    double bytes;           // DRAM bytes the work must move (compulsory)
    double flops;
};

struct Config {
    std::string name, group;
    const Kernel* k;
    int block, grid;
    size_t smem;
    int blocks_per_sm;
};

static float *d_in, *d_out, *d_table;
static int* d_idx;
static char* d_flush;
static const size_t FLUSH_BYTES = 256u << 20;

static void launch(const Config& c) {
    const Kernel* k = c.k;
    std::string nm = k->name;
    if (nm == "sweep_copy") sweep_copy<<<c.grid, c.block, c.smem>>>(d_in, d_out, k->n);
    else if (nm == "sweep_fma") sweep_fma<<<c.grid, c.block, c.smem>>>(d_in, d_out, k->n, 0.999f, 0.001f);
    else if (nm == "sweep_gather") sweep_gather<<<c.grid, c.block, c.smem>>>(d_table, d_idx, d_out, k->n);
    else if (k->ilp == 1) sweep_read_ilp<1><<<c.grid, c.block, c.smem>>>(d_in, d_out, k->n);
    else if (k->ilp == 2) sweep_read_ilp<2><<<c.grid, c.block, c.smem>>>(d_in, d_out, k->n);
    else if (k->ilp == 4) sweep_read_ilp<4><<<c.grid, c.block, c.smem>>>(d_in, d_out, k->n);
    else sweep_read_ilp<8><<<c.grid, c.block, c.smem>>>(d_in, d_out, k->n);
    CK(cudaGetLastError());
}

static int occ(const Kernel* k, int block, size_t smem) {
    int b = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, k->fn, block, smem));
    return b;
}

// The largest dynamic smem (256-byte steps) that leaves exactly `target` blocks of `block` threads per SM.
static size_t smem_for(const Kernel* k, int block, int target, size_t max_smem) {
    size_t best = (size_t)-1;
    for (size_t s = 0; s <= max_smem; s += 256)
        if (occ(k, block, s) == target) best = s;
    return best;
}

int main(int argc, char** argv) {
    bool ncu = false;
    int runs = 7;
    std::string only;  // run only the configurations whose name starts with this
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--ncu")) ncu = true;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    size_t max_smem = prop.sharedMemPerBlockOptin;

    CK(cudaMalloc(&d_in, N_READ * sizeof(float)));
    CK(cudaMalloc(&d_out, N_READ * sizeof(float)));
    CK(cudaMalloc(&d_table, N_TABLE * sizeof(float)));
    CK(cudaMalloc(&d_idx, N_GATHER * sizeof(int)));
    CK(cudaMalloc(&d_flush, FLUSH_BYTES));
    {
        std::vector<float> h(N_READ);
        for (long long i = 0; i < N_READ; ++i) h[i] = (float)(i % 1000) * 1e-3f;
        CK(cudaMemcpy(d_in, h.data(), N_READ * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_table, h.data(), N_TABLE * sizeof(float), cudaMemcpyHostToDevice));
        std::vector<int> idx(N_GATHER);
        unsigned long long x = 88172645463325252ULL;  // xorshift64: uniform random indices into the table
        for (long long i = 0; i < N_GATHER; ++i) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            idx[i] = (int)(x % (unsigned long long)N_TABLE);
        }
        CK(cudaMemcpy(d_idx, idx.data(), N_GATHER * sizeof(int), cudaMemcpyHostToDevice));
    }

    Kernel kernels[] = {
        {"sweep_copy", (const void*)sweep_copy, 1, N_COPY, 8.0 * N_COPY, 0},
        {"sweep_fma", (const void*)sweep_fma, 1, N_FMA, 8.0 * N_FMA, 2.0 * N_FMA * FMA_ITERS},
        {"sweep_gather", (const void*)sweep_gather, 1, N_GATHER, 8.0 * N_GATHER + 32.0 * N_GATHER, 0},
        {"sweep_read_ilp1", (const void*)sweep_read_ilp<1>, 1, N_READ, 4.0 * N_READ, 0},
        {"sweep_read_ilp2", (const void*)sweep_read_ilp<2>, 2, N_READ, 4.0 * N_READ, 0},
        {"sweep_read_ilp4", (const void*)sweep_read_ilp<4>, 4, N_READ, 4.0 * N_READ, 0},
        {"sweep_read_ilp8", (const void*)sweep_read_ilp<8>, 8, N_READ, 4.0 * N_READ, 0},
    };
    std::vector<Config> configs;
    for (const Kernel& k : kernels) {
        CK(cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)max_smem));
        CK(cudaFuncSetAttribute(k.fn, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
        // grid: enough blocks for one element (K for ILP K) per thread, as a one-pass launch would use.
        auto full_grid = [&](int block) {
            long long threads = k.n / k.ilp;
            return (int)std::min<long long>((threads + block - 1) / block, 1LL << 30);
        };
        for (int b = 1; b <= 8; ++b) {
            size_t s = smem_for(&k, 256, b, max_smem);
            if (s == (size_t)-1) continue;
            char nm[96];
            snprintf(nm, sizeof nm, "%s.occ_w%02d", k.name, b * 8);
            configs.push_back({nm, "occupancy", &k, 256, full_grid(256), s, b});
        }
        for (int block : {64, 128, 256, 512, 1024}) {
            char nm[96];
            snprintf(nm, sizeof nm, "%s.block_%04d", k.name, block);
            configs.push_back({nm, "block", &k, block, full_grid(block), 0, occ(&k, block, 0)});
        }
        int per_sm = occ(&k, 256, 0);
        for (double waves : {0.25, 1.0, 1.5}) {
            char nm[96];
            snprintf(nm, sizeof nm, "%s.grid_%03dpct_wave", k.name, (int)(waves * 100));
            configs.push_back({nm, "grid", &k, 256, (int)(waves * per_sm * sms), 0, per_sm});
        }
    }

    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("ncu_order,config,group,kernel,ilp,block,grid,dyn_smem_bytes,regs_per_thread,static_smem_bytes,"
           "blocks_per_sm,warps_per_sm,work_elements,bytes,flops,runs,median_ns,min_ns,max_ns,times_ns\n");
    int order = 0;
    for (const Config& c : configs) {
        if (c.name.compare(0, only.size(), only) != 0) { ++order; continue; }
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, c.k->fn));
        std::vector<float> t;
        if (ncu) {
            nvtxRangePushA(c.name.c_str());
            launch(c);
            CK(cudaDeviceSynchronize());
            nvtxRangePop();
        } else {
            launch(c);  // warm-up
            for (int r = 0; r < runs; ++r) {
                CK(cudaMemsetAsync(d_flush, r & 0xff, FLUSH_BYTES));
                CK(cudaEventRecord(e0));
                launch(c);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                t.push_back(ms * 1e6f);
            }
        }
        std::vector<float> s = t;
        std::sort(s.begin(), s.end());
        double med = s.empty() ? 0 : s[s.size() / 2];
        printf("%d,%s,%s,%s,%d,%d,%d,%zu,%d,%zu,%d,%d,%lld,%.0f,%.0f,%d,%.0f,%.0f,%.0f,", order++, c.name.c_str(),
               c.group.c_str(), c.k->name, c.k->ilp, c.block, c.grid, c.smem, fa.numRegs, fa.sharedSizeBytes,
               c.blocks_per_sm, c.blocks_per_sm * c.block / 32, c.k->n, c.k->bytes, c.k->flops, (int)t.size(), med,
               s.empty() ? 0.0 : s.front(), s.empty() ? 0.0 : s.back());
        for (size_t i = 0; i < t.size(); ++i) printf("%s%.0f", i ? ";" : "", t[i]);
        printf("\n");
        fflush(stdout);
    }
    fprintf(stderr, "%d configurations on %s (%d SMs)\n", order, prop.name, sms);
    return 0;
}
