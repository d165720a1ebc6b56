// warp_trace.cuh - record when each warp of a kernel starts and ends, and on which SM (tracekit).
//
// Use:
//   #include "warp_trace.cuh"
//
//   __global__ void my_kernel(const float* in, float* out, WarpRecord* rec) {
//       WARP_TRACE_BEGIN(rec);   // first statement of the kernel
//       ...                      // the kernel's work (no early `return` between the two macros)
//       WARP_TRACE_END(rec);     // last statement, reached by every thread that started
//   }
//
//   // host: one record per warp of the launch; rec == nullptr turns tracing off (two untaken branches remain)
//   size_t n = warp_trace::record_count(grid, block);
//   WarpRecord* rec;  cudaMalloc(&rec, n * sizeof(WarpRecord));  cudaMemset(rec, 0, n * sizeof(WarpRecord));
//   my_kernel<<<grid, block, smem>>>(in, out, rec);
//   warp_trace::write_csv("my_kernel.csv", "my_kernel", (const void*)my_kernel, grid, block, smem, rec);
//
// Each record holds %globaltimer at entry and exit (ns, one clock for all SMs; 32 ns steps on an H100), clock64()
// at entry and exit (cycles of that SM's own counter, not comparable across SMs) and %smid. The lowest active
// lane of each warp reads the timers after __syncwarp(), so a record spans the whole warp. Records are indexed by
// linearized blockIdx and by linearized threadIdx / 32. The cost is a few instructions and one 40-byte store per
// warp; tracing with a null pointer costs two predicated-off branches.
//
// write_csv writes the tracekit warp-trace CSV (v1): `# key: value` metadata lines (kernel, device, clock, launch
// configuration, registers and shared memory from cudaFuncGetAttributes), then
// `launch,sm_id,block_id,warp_in_block,start_ns,end_ns,start_cycles,end_cycles` and one row per warp.
#pragma once

struct WarpRecord {
    unsigned long long start_ns;  // %globaltimer at entry
    unsigned long long end_ns;    // %globaltimer at exit (0 if the warp never reached WARP_TRACE_END)
    long long start_cycles;       // clock64() at entry
    long long end_cycles;         // clock64() at exit
    unsigned int sm_id;           // %smid
    unsigned int reserved;
};

namespace warp_trace {

__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned int sm_id() {
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

__device__ __forceinline__ unsigned int lane_id() {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// Index of this warp's record: linearized block * warps per block + linearized thread / 32.
__device__ __forceinline__ unsigned long long record_index() {
    const unsigned long long block =
        blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    const unsigned int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned int warps_per_block = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    return block * warps_per_block + thread / 32;
}

}  // namespace warp_trace

// Entry: all lanes read the timers (the values of the lowest active lane are the ones stored at exit).
#define WARP_TRACE_BEGIN(rec)                                        \
    unsigned long long warp_trace_start_ns_ = 0;                     \
    long long warp_trace_start_cycles_ = 0;                          \
    if ((rec) != nullptr) {                                          \
        __syncwarp(__activemask());                                  \
        warp_trace_start_ns_ = warp_trace::globaltimer_ns();         \
        warp_trace_start_cycles_ = clock64();                        \
    }

// Exit: wait for the warp's active lanes, then its lowest active lane reads the timers and stores the record.
#define WARP_TRACE_END(rec)                                                                 \
    if ((rec) != nullptr) {                                                                 \
        const unsigned int warp_trace_mask_ = __activemask();                               \
        __syncwarp(warp_trace_mask_);                                                       \
        if (warp_trace::lane_id() == (unsigned int)(__ffs(warp_trace_mask_) - 1)) {         \
            const unsigned long long warp_trace_end_ns_ = warp_trace::globaltimer_ns();    \
            const long long warp_trace_end_cycles_ = clock64();                             \
            WarpRecord warp_trace_r_;                                                       \
            warp_trace_r_.start_ns = warp_trace_start_ns_;                                  \
            warp_trace_r_.end_ns = warp_trace_end_ns_;                                      \
            warp_trace_r_.start_cycles = warp_trace_start_cycles_;                          \
            warp_trace_r_.end_cycles = warp_trace_end_cycles_;                              \
            warp_trace_r_.sm_id = warp_trace::sm_id();                                      \
            warp_trace_r_.reserved = 0;                                                     \
            (rec)[warp_trace::record_index()] = warp_trace_r_;                              \
        }                                                                                   \
    }

#ifndef __CUDACC_RTC__
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

namespace warp_trace {

// Number of records one launch needs: blocks in the grid times warps per block.
inline size_t record_count(dim3 grid, dim3 block) {
    const size_t warps_per_block = ((size_t)block.x * block.y * block.z + 31) / 32;
    return (size_t)grid.x * grid.y * grid.z * warps_per_block;
}

// Copy `launches` consecutive launches' records (launch L at device_records + L * record_count) from the device
// and write them as a tracekit warp-trace CSV. `kernel` is the __global__ function (for its registers and static
// shared memory). launch_duration_ns < 0 leaves that optional line out. Records whose end_ns is 0 (warps that
// never reached WARP_TRACE_END, given a zeroed buffer) are skipped with a note on stderr. Returns the first CUDA
// error, or cudaErrorUnknown when the file cannot be written.
inline cudaError_t write_csv(const char* path, const char* kernel_name, const void* kernel, dim3 grid, dim3 block,
                             size_t dynamic_smem_bytes, const WarpRecord* device_records, int launches = 1,
                             double launch_duration_ns = -1.0) {
    int device = 0, sm_count = 0, clock_khz = 0, max_threads_per_sm = 0, major = 0, minor = 0;
    cudaDeviceProp prop;
    cudaFuncAttributes attr;
    cudaError_t err;
    if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
    if ((err = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device)) !=
        cudaSuccess)
        return err;
    if ((err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) != cudaSuccess) return err;
    if ((err = cudaFuncGetAttributes(&attr, kernel)) != cudaSuccess) return err;

    const size_t per_launch = record_count(grid, block);
    std::vector<WarpRecord> records(per_launch * launches);
    err = cudaMemcpy(records.data(), device_records, records.size() * sizeof(WarpRecord), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) return err;

    FILE* f = std::fopen(path, "w");
    if (f == nullptr) return cudaErrorUnknown;
    std::fprintf(f, "# tracekit-warp-trace v1\n");
    std::fprintf(f, "# kernel: %s\n", kernel_name);
    std::fprintf(f, "# device_name: %s\n", prop.name);
    std::fprintf(f, "# compute_capability: %d.%d\n", major, minor);
    std::fprintf(f, "# sm_count: %d\n", sm_count);
    std::fprintf(f, "# sm_clock_hz: %lld\n", (long long)clock_khz * 1000);
    std::fprintf(f, "# max_warps_per_sm: %d\n", max_threads_per_sm / 32);
    std::fprintf(f, "# grid: %u,%u,%u\n", grid.x, grid.y, grid.z);
    std::fprintf(f, "# block: %u,%u,%u\n", block.x, block.y, block.z);
    std::fprintf(f, "# registers_per_thread: %d\n", attr.numRegs);
    std::fprintf(f, "# static_smem_bytes: %zu\n", attr.sharedSizeBytes);
    std::fprintf(f, "# dynamic_smem_bytes: %zu\n", dynamic_smem_bytes);
    if (launch_duration_ns >= 0.0) std::fprintf(f, "# launch_duration_ns: %.0f\n", launch_duration_ns);
    std::fprintf(f, "# clock_bits: 64\n");
    std::fprintf(f, "launch,sm_id,block_id,warp_in_block,start_ns,end_ns,start_cycles,end_cycles\n");

    const size_t warps_per_block = ((size_t)block.x * block.y * block.z + 31) / 32;
    size_t missing = 0;
    for (size_t i = 0; i < records.size(); ++i) {
        const WarpRecord& r = records[i];
        if (r.end_ns == 0) {
            ++missing;
            continue;
        }
        const size_t in_launch = i % per_launch;
        std::fprintf(f, "%zu,%u,%zu,%zu,%llu,%llu,%lld,%lld\n", i / per_launch, r.sm_id, in_launch / warps_per_block,
                     in_launch % warps_per_block, r.start_ns, r.end_ns, r.start_cycles, r.end_cycles);
    }
    const bool write_failed = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || write_failed) return cudaErrorUnknown;
    if (missing > 0)
        std::fprintf(stderr, "warp_trace: %s: %zu of %zu warps left no record (skipped)\n", path, missing,
                     records.size());
    return cudaSuccess;
}

}  // namespace warp_trace
#endif  // __CUDACC_RTC__
